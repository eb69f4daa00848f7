"""``history_read``'s header without walking chains of checkpoints on every read: a state that
folds a wider range names the checkpoints holding the rest of it by looking only at those
summarised after the range begins, walking each only while it stays in the range, and the span
behind a checkpoint (a rollup heads the chain of every older stub) is remembered once walked;
what it says is what walking every checkpoint's whole chain said (docs/compaction.md, "The two
recall tools")."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.events import Event, EventsByType
from dsh.recall import list_checkpoints, read_checkpoint
from dsh.recall.checkpoints import Checkpoint, ConversationSpans, conversation_span, lies_within
from dsh.store import MemoryStore
from dsh.surface import Session
from tests.helpers import append_chat_turn, append_tool_turn, new_session
from tests.recall.builders import bracket


def reference_folded(
    events: Sequence[Event], target: Checkpoint, index: EventsByType | None
) -> str:
    """The note as it was first written: every checkpoint's whole conversation span."""
    wider = target.summary.data.input_range
    if target.kind != "state" or wider is None:
        return ""
    start = conversation_span(events, target.shadowed_seqs)[0]
    if wider[0] >= start:
        return ""
    behind = []
    for other in list_checkpoints(events, index):
        if other.id == target.id:
            continue
        first, last = conversation_span(events, other.shadowed_seqs)
        if wider[0] <= first and last < start:
            behind.append(other.id)
    where = f" behind {', '.join(behind)}" if behind else " in earlier checkpoints"
    return (
        f" This state folds #{wider[0]}–#{wider[1]}; the messages before #{start} are{where} "
        "(history_search without a checkpoint scans them all)."
    )


def compacted_session(data: st.DataObject) -> Session:
    """Turns compacted in random runs of surface units (turns and checkpoints), so checkpoints
    shadow checkpoints (rollups, superseded states, chains of them), with random kinds and, for
    states, random wider input ranges."""
    session = new_session(MemoryStore())
    units: list[list[int]] = []  # what is on the surface, in order: a turn's nodes or a node
    for step in range(data.draw(st.integers(3, 14), label="steps")):
        if data.draw(st.booleans(), label="tool"):
            units.append(append_tool_turn(session, f"p{step}", final=f"r{step}").surface)
        else:
            units.append(append_chat_turn(session, f"p{step}", f"r{step}").surface)
        if len(units) >= 2 and data.draw(st.integers(0, 2), label="compact"):
            first = data.draw(st.integers(0, len(units) - 1), label="first")
            last = data.draw(st.integers(first, min(len(units) - 1, first + 3)), label="last")
            shadowed = [seq for unit in units[first : last + 1] for seq in unit]
            kind = data.draw(st.sampled_from(["index", "state", None]), label="kind")
            wider = None
            if kind != "index" and data.draw(st.booleans(), label="wider"):
                low = data.draw(st.integers(0, len(session.events) - 1), label="low")
                wider = (low, len(session.events) - 1)
            made = bracket(
                session,
                shadowed,
                f"s{step}",
                kind=kind,
                compaction_id=f"k{step}",
                input_range=wider,
            )
            assert made.node is not None
            units[first : last + 1] = [[made.node]]
    return session


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_state_read_names_the_checkpoints_the_whole_chain_walk_named(data: st.DataObject):
    session = compacted_session(data)
    events = session.events
    for target in list_checkpoints(events):
        for index in (None, session):
            header = read_checkpoint(events, target.id, index=index).text.split("\n\n")[0]
            start, end = conversation_span(events, target.shadowed_seqs)
            assert header.startswith(
                f"Checkpoint {target.id} ({target.kind}) shadows "
                f"conversation span #{start}–#{end}: "
            )
            _, folds, note = header.partition(" This state folds")
            assert folds + note == reference_folded(events, target, index)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_lies_within_answers_what_the_whole_conversation_span_answers(data: st.DataObject):
    session = compacted_session(data)
    events = session.events
    for target in list_checkpoints(events):
        low = data.draw(st.integers(0, len(events)), label="low")
        high = data.draw(st.integers(low, len(events) + 1), label="high")
        first, last = conversation_span(events, target.shadowed_seqs)
        assert lies_within(events, target.shadowed_seqs, low, high) == (
            low <= first and last < high
        )


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_remembered_conversation_spans_equal_fresh_ones_whatever_was_read_before(
    data: st.DataObject,
):
    """One memo across reads in any order, over two logs (the same seqs mean other events in
    each), answers what a fresh walk answers."""
    memo = ConversationSpans()
    logs = [compacted_session(data), compacted_session(data)]
    reads = [
        (log, seqs)
        for log in logs
        for target in list_checkpoints(log.events)
        for seqs in (target.shadowed_seqs, (target.node.seq,))  # what it shadows; its node
    ]
    for log, seqs in data.draw(st.permutations(reads), label="order"):
        assert memo.of(log.events, seqs) == conversation_span(log.events, seqs)
