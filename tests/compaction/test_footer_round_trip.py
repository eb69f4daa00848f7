"""Every checkpoint text ends with the exact footer, and the footers survive a save/load round
trip on both stores (docs/compaction.md, "The footer")."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.events import (
    CompactionSummaryEvent,
    encode_event,
    is_append_surface_event,
    is_checkpoint_event,
    is_replacement_surface_event,
)
from dsh.store import open_store
from dsh.surface import Session
from tests.agent.conftest import run
from tests.compaction.test_recallable import engine_for, long_session
from tests.helpers import append_tool_turn


def _conversation_seqs(session: Session, seq: int) -> set[int]:
    """The conversation events a surface node stands for: itself if it was appended, else what
    the surface events it replaced stand for (through superseded checkpoints and pruned results;
    a bracket's start and summary are not conversation)."""
    event = session.events[seq]
    if not is_replacement_surface_event(event):
        return {seq}
    found: set[int] = set()
    for source in event.source_event_seqs or ():
        cited = session.events[source]
        if is_append_surface_event(cited) or is_replacement_surface_event(cited):
            found |= _conversation_seqs(session, source)
    return found


def _expected_footer(session: Session, checkpoint_seq: int) -> str:
    checkpoint = session.events[checkpoint_seq]
    assert is_checkpoint_event(checkpoint) and checkpoint.source_event_seqs is not None
    summary = session.events[checkpoint.source_event_seqs[1]]
    assert isinstance(summary, CompactionSummaryEvent)
    if summary.data.kind == "state" and summary.data.input_range is not None:
        start, end = summary.data.input_range
    else:
        stands_for: set[int] = set()
        for seq in summary.data.shadowed_seqs:
            stands_for |= _conversation_seqs(session, seq)
        start, end = min(stands_for), max(stands_for)
    return (
        f"[checkpoint c{summary.seq}: shadows conversation span #{start}\u2013#{end}; "
        "originals retrievable via history_read]"
    )


def _two_passes(home: Path, backend: str) -> Session:
    session = long_session(open_store(home, backend))
    engine = engine_for(session)
    run(engine.compact_now(window=100_000))
    for i in range(8, 12):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    run(engine.compact_now(window=100_000))
    return session


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_footers_are_exact_and_survive_a_save_load_round_trip(tmp_path: Path, backend: str):
    session = _two_passes(tmp_path, backend)
    checkpoints = [e.seq for e in session.events if is_checkpoint_event(e)]
    kinds = [session.events[session.events[c].source_event_seqs[1]].data.kind for c in checkpoints]  # type: ignore[index]
    assert kinds.count("state") == 2 and kinds.count("index") >= 4  # a superseded state too
    expected = {c: _expected_footer(session, c) for c in checkpoints}
    for seq, footer in expected.items():
        assert session.events[seq].data.text().endswith("\n" + footer)  # type: ignore[union-attr]
    written = [encode_event(e) for e in session.events]
    session_id = session.id
    session.close()

    reopened = Session.open(open_store(tmp_path, backend), session_id)
    assert [encode_event(e) for e in reopened.events] == written
    for seq, footer in expected.items():
        assert reopened.events[seq].data.text().endswith("\n" + footer)  # type: ignore[union-attr]
        assert _expected_footer(reopened, seq) == footer
