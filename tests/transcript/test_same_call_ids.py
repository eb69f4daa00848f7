"""Replies that all number their tool calls from ``call_0`` (llama.cpp, some vLLM and Ollama
versions): each card of the human transcript shows its own call's result (docs/architecture.md,
"Tool-call pairing")."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings

from dsh.events import AssistantMessage, ToolCall, ToolCallEvent
from dsh.store import JsonlStore, MemoryStore
from dsh.transcript import ToolCallItem, ToolResultItem, TranscriptItem, project
from dsh.transcript.find import find_in_transcript
from tests.helpers import append_tool_turn, assistant_message, new_session, tool_call_block
from tests.same_call_ids import (
    FIRST_OUTPUT,
    MISSING_DIR,
    build_log,
    reply_specs,
    run_same_id_turn,
)


def same_id_events(tmp_path: Path) -> list:
    store = JsonlStore(tmp_path / "home")
    session_id = run_same_id_turn(store, tmp_path / "ws")
    log = store.open(session_id)
    events = list(log.events)
    log.close()
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [c.data.call_id for c in calls] == ["call_0", "call_0"]  # the case under test
    return events


def cards(items: list[TranscriptItem]) -> dict[int, tuple[str, ToolResultItem | None]]:
    """Per call seq: the tool's name and the result the projection pairs with its card."""
    shown = {i.seq: (i.name, None) for i in items if isinstance(i, ToolCallItem)}
    out: dict[int, tuple[str, ToolResultItem | None]] = dict(shown)
    for item in items:
        if isinstance(item, ToolResultItem) and item.card_seq is not None:
            out[item.card_seq] = (out[item.card_seq][0], item)
    return out


def test_each_card_of_two_replies_calling_call_0_shows_its_own_output_and_status(tmp_path):
    items, _ = project(same_id_events(tmp_path))
    (first_seq, (first_name, first)), (second_seq, (second_name, second)) = sorted(
        cards(items).items()
    )
    assert (first_name, second_name) == ("read_file", "list_dir")
    assert first is not None and second is not None
    assert FIRST_OUTPUT in first.text and not first.is_error
    assert MISSING_DIR in second.text and second.is_error
    assert first_seq < first.seq < second_seq < second.seq  # each result after its own call


def test_find_names_the_card_each_hit_shows_in(tmp_path):
    events = same_id_events(tmp_path)
    calls = [e.seq for e in events if isinstance(e, ToolCallEvent)]
    [first_result] = find_in_transcript(events, "FIRST-CALL-OUTPUT")
    assert (first_result.kind, first_result.card_seq) == ("tool-result", calls[0])
    hits = find_in_transcript(events, MISSING_DIR)
    tool_hits = [(h.kind, h.card_seq) for h in hits if h.kind.startswith("tool")]
    assert tool_hits == [("tool-call", calls[1]), ("tool-result", calls[1])]


def test_a_tool_call_its_own_reply_did_not_ask_for_shows_no_card():
    session = new_session(MemoryStore())
    append_tool_turn(session, calls=[("read_file", "{}", "ok")])
    first_id = next(e.data.call_id for e in session.events if isinstance(e, ToolCallEvent))
    other = assistant_message(tool_calls=[tool_call_block("call_other")])
    session.append(AssistantMessage(turn=2, step=1, message=other))
    stray = session.append(
        ToolCall(turn=2, step=1, call_id=first_id, name="read_file", arguments="{}")
    ).seq
    items, _ = project(session.events)
    assert stray not in {i.seq for i in items}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reply_specs())
def test_every_result_pairs_with_the_call_it_answers_by_position(replies):
    built = build_log(MemoryStore(), replies)
    items, _ = project(built.session.events)
    paired = {i.seq: i.card_seq for i in items if isinstance(i, ToolResultItem)}
    assert paired == built.answers
    for seq, text in built.texts.items():
        [hit] = find_in_transcript(built.session.events, text)
        expected = built.answers[seq]
        assert hit.card_seq == (expected if expected is not None else seq)
