"""One checkpoint vocabulary (``dsh.surface.checkpoints``): compaction, recall and the faces read
a checkpoint's summary and kind the same way."""

from __future__ import annotations

from dsh.events import ReplaceOp
from dsh.recall import list_checkpoints
from dsh.store import MemoryStore
from dsh.surface import (
    checkpoint_kind,
    checkpoint_summary_event,
    checkpoint_summary_text,
    summary_of_node,
)
from tests.agent.conftest import run
from tests.compaction.test_recallable import engine_for, long_session
from tests.helpers import append_chat_turn, checkpoint_message, new_session


def test_recall_and_compaction_agree_on_every_checkpoint_of_a_recallable_session():
    session = long_session()
    engine = engine_for(session)
    run(engine.compact_now(window=100_000))
    for i in range(4):
        append_chat_turn(session, f"later {i}", "x " * 200)
    run(engine.compact_now(window=100_000))
    listed = list_checkpoints(session.events)
    assert {c.kind for c in listed} == {"index", "state"}
    for checkpoint in listed:
        node = checkpoint.node.seq
        assert checkpoint_kind(session, node) == checkpoint.kind
        assert checkpoint_summary_event(session, node) is checkpoint.summary
        assert summary_of_node(session.events, node) is checkpoint.summary
        assert checkpoint_summary_text(session, node) == checkpoint.summary.data.summary


def test_a_node_that_is_not_a_checkpoint_has_no_kind_and_a_summaryless_one_counts_as_state():
    session = new_session(MemoryStore())
    turn = append_chat_turn(session, "old", "older")
    assert checkpoint_kind(session, turn.user) is None
    seq = session.append(
        checkpoint_message("legacy checkpoint text", "legacy"),
        surface_op=ReplaceOp(start=turn.user, end=turn.assistants[-1]),
        source_event_seqs=[turn.user, *turn.assistants],
    ).seq
    assert checkpoint_kind(session, seq) == "state"
    assert checkpoint_summary_event(session, seq) is None
    assert checkpoint_summary_text(session, seq) is None
