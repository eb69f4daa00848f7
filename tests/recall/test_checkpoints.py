"""Finding checkpoints by ``c<summarySeq>`` and the typed errors for everything else
(docs/compaction.md, "The two recall tools")."""

from __future__ import annotations

import pytest

from dsh.events import CompactionStartEvent, CompactionSummaryEvent, event_type_of
from dsh.recall import (
    CHECKPOINT_NOT_FOUND,
    INVALID_ARGUMENT,
    NO_COMPACTED_HISTORY,
    ORPHANED_COMPACTION,
    RecallError,
    checkpoint_id,
    list_checkpoints,
    parse_checkpoint_id,
    resolve_checkpoint,
)
from dsh.store import MemoryStore
from dsh.surface import summary_of_node
from tests.helpers import append_chat_turn, new_session, replace_with_checkpoint
from tests.recall.builders import bracket, two_passes


def error_of(events, checkpoint) -> RecallError:
    with pytest.raises(RecallError) as caught:
        resolve_checkpoint(events, checkpoint)
    return caught.value


def test_a_checkpoint_id_is_c_and_the_seq_of_its_summary_event():
    passes = two_passes()
    events = passes.session.events
    assert checkpoint_id(passes.state1.summary) == passes.state1.id
    assert isinstance(events[passes.state1.summary], CompactionSummaryEvent)
    assert parse_checkpoint_id(passes.state1.id) == passes.state1.summary


def test_completed_checkpoints_are_listed_in_log_order_including_superseded_ones():
    passes = two_passes()
    listed = list_checkpoints(passes.session.events)
    assert [c.id for c in listed] == [
        passes.index1.id,
        passes.state1.id,
        passes.index2.id,
        passes.state2.id,
    ]
    assert [c.kind for c in listed] == ["index", "state", "index", "state"]
    # pass 1's state is superseded: its node is no longer on the surface, but it is still listed
    assert passes.state1.node not in passes.session.nodes


def test_resolving_an_id_gives_the_bracket_the_checkpoint_node_and_the_shadowed_seqs():
    passes = two_passes()
    checkpoint = resolve_checkpoint(passes.session.events, f"  {passes.state1.id} ")
    assert checkpoint.id == passes.state1.id and checkpoint.seq == passes.state1.summary
    assert checkpoint.start.seq == passes.state1.start
    assert checkpoint.node.seq == passes.state1.node
    assert checkpoint.end.seq == passes.state1.end
    assert checkpoint.shadowed_seqs == tuple(passes.turn2_surface)
    assert checkpoint.shadowed_range == (passes.turn2_surface[0], passes.turn2_surface[-1])


@pytest.mark.parametrize(
    "bad", ["", "x", "23", "c", "c-1", "C23", "c2.5", "c 23", "c٢٣", "checkpoint c23", 23, None]
)
def test_an_id_that_is_not_c_and_digits_is_an_invalid_argument(bad):
    error = error_of(two_passes().session.events, bad)
    assert error.code == INVALID_ARGUMENT
    assert "c123" in error.message and repr(bad) in error.message


def test_an_id_whose_seq_holds_another_event_is_not_found_and_says_what_is_there():
    passes = two_passes()
    events = passes.session.events
    seq = passes.turn2_surface[0]
    error = error_of(events, f"c{seq}")
    assert error.code == CHECKPOINT_NOT_FOUND
    assert event_type_of(events[seq]) == "user/message"
    assert f"the event at seq {seq} is user/message, not compaction/summary" in error.message
    assert f"Completed checkpoints (oldest first): {passes.index1.id}" in error.message


def test_an_id_past_the_end_of_the_log_is_not_found():
    passes = two_passes()
    error = error_of(passes.session.events, "c999999")
    assert error.code == CHECKPOINT_NOT_FOUND
    assert f"the log has only {len(passes.session.events)} events" in error.message


def test_not_found_in_a_session_without_compaction_says_there_is_no_compacted_history():
    session = new_session(MemoryStore())
    append_chat_turn(session)
    error = error_of(session.events, "c1")
    assert error.code == CHECKPOINT_NOT_FOUND
    assert NO_COMPACTED_HISTORY in error.message
    assert list_checkpoints(session.events) == []


def test_the_hint_lists_the_five_most_recent_checkpoints_and_counts_the_older_ones():
    session = new_session(MemoryStore())
    ids = []
    for i in range(7):
        turn = append_chat_turn(session, f"q{i}", f"a{i}")
        ids.append(bracket(session, turn.surface, f"s{i}", compaction_id=f"k{i}").id)
    error = error_of(session.events, "c0")
    assert f"oldest first): {', '.join(ids[2:])} (and 2 older)." in error.message


def test_an_id_pointing_at_a_compaction_start_is_orphaned_and_names_the_real_checkpoint():
    passes = two_passes()
    events = passes.session.events
    assert isinstance(events[passes.state1.start], CompactionStartEvent)
    error = error_of(events, f"c{passes.state1.start}")
    assert error.code == ORPHANED_COMPACTION
    assert "compaction/start" in error.message
    assert f"its checkpoint id is {passes.state1.id}" in error.message


def test_an_id_pointing_at_the_start_of_a_failed_compaction_is_orphaned():
    session = new_session(MemoryStore())
    turn = append_chat_turn(session)
    failed = bracket(session, turn.surface, "s", compaction_id="k", end_error="boom")
    error = error_of(session.events, f"c{failed.start}")
    assert error.code == ORPHANED_COMPACTION
    assert "no completed checkpoint" in error.message


def test_a_bracket_without_an_end_is_orphaned_and_not_listed():
    session = new_session(MemoryStore())
    turn = append_chat_turn(session)
    open_bracket = bracket(session, turn.surface, "s", compaction_id="k", with_end=False)
    error = error_of(session.events, open_bracket.id)
    assert error.code == ORPHANED_COMPACTION
    assert "no compaction/end" in error.message
    assert list_checkpoints(session.events) == []


def test_a_bracket_that_ended_with_an_error_is_orphaned_and_not_listed():
    session = new_session(MemoryStore())
    turn = append_chat_turn(session)
    failed = bracket(
        session, turn.surface, "s", compaction_id="k", with_replace=False, end_error="exploded"
    )
    error = error_of(session.events, failed.id)
    assert error.code == ORPHANED_COMPACTION
    assert "ended with an error (exploded)" in error.message
    assert list_checkpoints(session.events) == []


def test_a_bracket_whose_replace_never_landed_is_orphaned_and_not_listed():
    session = new_session(MemoryStore())
    turn = append_chat_turn(session)
    unlanded = bracket(session, turn.surface, "s", compaction_id="k", with_replace=False)
    error = error_of(session.events, unlanded.id)
    assert error.code == ORPHANED_COMPACTION
    assert "replace never landed" in error.message
    assert list_checkpoints(session.events) == []


def test_a_summary_without_its_compaction_start_is_orphaned():
    from dsh.events import CompactionSummary

    session = new_session(MemoryStore())
    turn = append_chat_turn(session)
    seq = session.append(
        CompactionSummary(
            compaction_id="nowhere",
            summary="s",
            shadowed_range=(turn.surface[0], turn.surface[-1]),
            shadowed_seqs=tuple(turn.surface),
            shadowed_token_count=1,
            provider="p",
            model="m",
        )
    ).seq
    error = error_of(session.events, f"c{seq}")
    assert error.code == ORPHANED_COMPACTION
    assert "no compaction/start" in error.message


def test_a_reused_compaction_id_pairs_each_summary_with_its_own_bracket():
    session = new_session(MemoryStore())
    first = bracket(session, append_chat_turn(session).surface, "one", compaction_id="same")
    second = bracket(session, append_chat_turn(session).surface, "two", compaction_id="same")
    listed = list_checkpoints(session.events)
    assert [(c.start.seq, c.node.seq, c.end.seq) for c in listed] == [
        (first.start, first.node, first.end),
        (second.start, second.node, second.end),
    ]


def test_the_summary_of_a_checkpoint_node_is_read_from_its_sources():
    passes = two_passes()
    events = passes.session.events
    summary = summary_of_node(events, passes.state1.node)
    assert summary is not None and summary.seq == passes.state1.summary
    assert summary_of_node(events, passes.turn2_surface[0]) is None
    session = new_session(MemoryStore())
    turn = append_chat_turn(session)
    legacy = replace_with_checkpoint(session, turn.surface[0], turn.surface[-1])
    assert summary_of_node(session.events, legacy) is None


def test_checkpoints_after_a_seq_are_the_listed_ones_after_it_an_unfinished_pass_left_out():
    """``checkpoints_after`` (what a state read names) lists what ``list_checkpoints`` lists
    after the seq, with or without the log's per-type index: a pass that never ended is in
    neither."""
    from dsh.recall.checkpoints import checkpoints_after

    session = new_session(MemoryStore())
    first = append_chat_turn(session)
    done = bracket(session, first.surface, "s1", compaction_id="k1")
    second = append_chat_turn(session)
    bracket(session, second.surface, "s2", compaction_id="k2", with_end=False)
    third = append_chat_turn(session)
    bracket(session, third.surface, "s3", compaction_id="k3")
    events = session.events
    listed = list_checkpoints(events)
    assert len(listed) == 2
    for seq in (0, done.start, len(events) - 1):
        expected = [c for c in listed if c.summary.seq > seq]
        assert checkpoints_after(events, seq) == expected
        assert checkpoints_after(events, seq, session) == expected  # its per-type index


def test_a_conversation_span_of_no_nodes_is_refused_with_or_without_memory():
    from dsh.recall.checkpoints import ConversationSpans, conversation_span

    events = new_session(MemoryStore()).events
    with pytest.raises(ValueError, match="at least one surface node"):
        conversation_span(events, [])
    with pytest.raises(ValueError, match="at least one surface node"):
        ConversationSpans().of(events, [])
