"""Crash repair when the turn's replies all number their calls from ``call_0``: the call left
open is the later reply's, though an earlier reply's ``call_0`` has its result."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings

from dsh.events import ToolCallEvent, ToolResultEvent
from dsh.store import TOOL_OUTCOME_UNKNOWN, JsonlStore, MemoryStore
from dsh.store.repair import scan_open_turn
from dsh.surface import Session
from tests.same_call_ids import build_log, crash_in_second_reply, reply_specs


def test_crash_repair_answers_the_open_call_0_of_the_later_reply(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path / "home")
    sid = crash_in_second_reply(store, tmp_path / "ws")
    crashed = len(store.open(sid).events)
    session = Session.open(store, sid, writable=True)
    calls = [e for e in session.events if isinstance(e, ToolCallEvent)]
    assert [c.data.call_id for c in calls] == ["call_0", "call_0"]
    [repair] = [e for e in session.events[crashed:] if isinstance(e, ToolResultEvent)]
    assert repair.data.error is not None and repair.data.error.code == TOOL_OUTCOME_UNKNOWN
    assert repair.source_event_seqs == (calls[1].seq,)
    assert (repair.data.step, repair.data.error.name) == (calls[1].data.step, "list_dir")
    assert session.tool_pairing_balanced_after(session.nodes[-1])  # the next request pairs
    session.close()


@settings(max_examples=150, deadline=None)
@given(reply_specs())
def test_the_open_calls_of_a_turn_are_those_its_last_reply_left_unanswered(replies) -> None:
    built = build_log(MemoryStore(), replies)
    scanned = scan_open_turn(built.session.events)
    found = [
        (c.call_id, c.name, c.step, c.started.seq if c.started is not None else None)
        for c in scanned.unanswered
    ]
    assert found == built.unanswered
