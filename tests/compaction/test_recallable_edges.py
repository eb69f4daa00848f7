"""Edge cases of the recallable backend and the chunker."""

from __future__ import annotations

import pytest

from dsh.compaction import CompactionError, ExtractiveSummarizer, SummaryOutput
from dsh.compaction.recallable import SpanNode, chunk_span
from dsh.compaction.recallable.texts import junk_reason
from dsh.events import ReplaceOp
from dsh.store import MemoryStore
from dsh.surface import checkpoint_kind, retain_boundary
from tests.agent.conftest import run
from tests.compaction.test_recallable import assert_layout, engine_for, long_session
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    checkpoint_message,
    new_session,
    user_message,
)


def test_a_checkpoint_without_a_summary_event_counts_as_legacy_state():
    session = new_session(MemoryStore())
    turn = append_chat_turn(session, "old", "older")
    seq = session.append(
        checkpoint_message("legacy checkpoint text", "legacy"),
        surface_op=ReplaceOp(start=turn.user, end=turn.assistants[-1]),
        source_event_seqs=[turn.user, *turn.assistants],
    ).seq
    assert checkpoint_kind(session, seq) == "state"
    assert checkpoint_kind(session, turn.turn_start) is None


def test_a_manual_pass_shadows_exactly_the_nodes_from_the_head_to_the_retain_boundary():
    session = long_session()
    engine = engine_for(session)
    span = session.nodes[: retain_boundary(session, engine.retain(100_000))]
    assert span and session.tool_pairing_balanced_after(span[-1])
    result = run(engine.compact_now(window=100_000))
    assert result is not None
    assert [seq for ref in result.checkpoints for seq in ref.shadowed_seqs] == span
    assert_layout(session)


class Empty:
    """Answers some task kinds with blank text; a different route (compact layout) whose
    one-call pass fails, so every stub and the state get a call of their own."""

    name = model = "empty"
    route = ("empty", "empty")

    def __init__(self, kinds):
        self.kinds = kinds
        self.calls: list[str] = []

    async def summarize(self, task):
        self.calls.append(task.kind)
        if task.kind == "pass":
            raise RuntimeError("the one call failed")
        if task.kind in self.kinds:
            return SummaryOutput(text="  ", provider="empty", model="empty")
        return await ExtractiveSummarizer().summarize(task)


def test_an_empty_stub_answer_degrades_to_a_fallback_pointer():
    session = long_session()
    summarizer = Empty({"stub"})
    result = run(engine_for(session, summarizer).compact_now(window=100_000))
    kinds = [session.events[c.summary_seq].data.degraded for c in result.checkpoints]
    assert kinds[:-1] and all(k == "fallback" for k in kinds[:-1]) and kinds[-1] is None
    assert summarizer.calls.count("stub") == 2 * (len(kinds) - 1)  # each asked once more


def test_an_empty_state_answer_aborts_the_pass():
    session = long_session()
    nodes = list(session.nodes)
    with pytest.raises(CompactionError, match="no text"):
        run(engine_for(session, Empty({"state"})).compact_now(window=100_000))
    assert session.nodes == nodes


def test_chunking_an_empty_span_gives_nothing_and_an_open_end_is_refused():
    assert chunk_span([], 400) == []
    with pytest.raises(ValueError, match="clean cut"):
        chunk_span([SpanNode(10, False, False)], 400)


def test_once_stubs_fill_their_share_the_oldest_are_rolled_up_by_code_and_new_stubs_land():
    session = long_session(turns=14)
    engine = engine_for(session)
    first = run(engine.compact_now(window=100_000))
    stubs_before = [c for c in first.checkpoints if c.kind == "index"]
    assert len(stubs_before) >= 2
    for i in range(8, 16):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    # a window so small that the committed stubs (730 tokens) already fill their share (712)
    second = run(engine.compact_now(window=3500))
    kinds = [c.kind for c in second.checkpoints]
    assert kinds[0] == "index" and kinds[-1] == "state" and kinds.count("index") >= 2
    assert_layout(session)
    rollup = session.events[second.checkpoints[0].summary_seq]
    assert rollup.data.provider == "code" and rollup.data.model == "rollup"
    rolled = set(rollup.data.shadowed_seqs)
    assert rolled <= {c.checkpoint_seq for c in stubs_before}
    text = session.events[second.checkpoints[0].checkpoint_seq].data.text()
    for stub in stubs_before:
        if stub.checkpoint_seq in rolled:  # every original footer is kept, verbatim
            original = session.events[stub.checkpoint_seq].data.text()
            assert original.splitlines()[-1] in text
    assert "ZEBRA-7700" in text  # keyword lines merged
    assert second.tokens_after < second.tokens_before


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "empty"),
        ("x" * 5000, "over-long"),
        ("Did things.\n[checkpoint c12: shadows conversation span #1–#4; ...]", "footer-like"),
        ("alpha beta gamma delta epsilon zeta eta theta iota kappa", "a copy of the slice"),
        (
            "\n".join(f"line {i} of the long tool output with enough words" for i in (3, 1, 4, 0)),
            "a copy of the slice",
        ),
        ("Read the config; the port is set.\nKeywords — value: 8080", None),
    ],
)
def test_junk_stub_answers_are_recognised(answer, reason):
    slice_messages = (
        user_message("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"),
        user_message(
            "\n".join(f"line {i} of the long tool output with enough words" for i in range(9))
        ),
    )
    assert junk_reason(answer, slice_messages, 100) == reason
