"""Rendering shadowed spans: transcript lines, checkpoint labels, footers, the span cache."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.compaction.prompts import footer
from dsh.events import (
    AssistantMessage,
    CompactionPrune,
    CompactionSummaryEvent,
    ReplaceOp,
    ToolResult,
    ToolResultEvent,
)
from dsh.recall import (
    INDEX_LABEL,
    PRIOR_STATE_LABEL,
    SpanCache,
    checkpoint_label,
    list_checkpoints,
    render_node,
    render_span,
    resolve_checkpoint,
    search_history,
)
from dsh.recall.parts import CONTINUED, PART_BREAK_ZONE, PART_CHARS, PART_OVERLAP, split_parts
from dsh.store import MemoryStore
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    assistant_message,
    compaction_bracket,
    new_session,
    replace_with_checkpoint,
    tool_result_message,
)
from tests.recall.builders import NEEDLE, bracket, two_passes


def test_a_span_renders_user_assistant_tool_calls_and_tool_results_one_string_per_message():
    passes = two_passes()
    events = passes.session.events
    span = render_span(events, resolve_checkpoint(events, passes.state1.id))
    assert span == (
        "User: run the migration",
        'Assistant: [tool call: bash({"command":"make migrate"})]',
        f"Tool result: migration failed: {NEEDLE} on users",
        "Assistant: the migration failed on the users table",
    )


def test_a_nested_state_checkpoint_is_labelled_prior_state_and_keeps_its_footer():
    passes = two_passes()
    events = passes.session.events
    span = render_span(events, resolve_checkpoint(events, passes.index2.id))
    assert span[0] == f"{PRIOR_STATE_LABEL}\n{passes.state1.text}"
    old_footer = footer(passes.state1.summary, (passes.turn2_surface[0], passes.turn2_surface[-1]))
    assert span[0].endswith(old_footer)
    assert span[1:] == ("User: what next?", "Assistant: let me check the users schema")


def test_a_nested_index_checkpoint_is_labelled_index_checkpoint_with_its_footer():
    session = new_session(MemoryStore())
    first = append_chat_turn(session, "first question", "first answer")
    stub = bracket(session, first.surface, "first q&a", kind="index", compaction_id="k1")
    later = append_chat_turn(session, "second question", "second answer")
    assert stub.node is not None
    outer = bracket(session, [stub.node, *later.surface], "all of it", compaction_id="k2")
    events = session.events
    span = render_span(events, resolve_checkpoint(events, outer.id))
    assert span[0] == f"{INDEX_LABEL}\n{stub.text}"
    assert span[0].endswith(
        f"[checkpoint {stub.id}: shadows conversation span "
        f"#{first.surface[0]}–#{first.surface[-1]}; originals retrievable via history_read]"
    )


def test_a_legacy_checkpoint_without_kind_or_without_summary_counts_as_prior_state():
    assert checkpoint_label(None) == PRIOR_STATE_LABEL
    assert checkpoint_label("state") == PRIOR_STATE_LABEL
    assert checkpoint_label("index") == INDEX_LABEL
    session = new_session(MemoryStore())
    turn = append_chat_turn(session, "old", "older")
    legacy = bracket(session, turn.surface, "legacy summary", kind=None, compaction_id="k1")
    summary = session.events[legacy.summary]
    assert isinstance(summary, CompactionSummaryEvent) and summary.data.kind is None
    assert legacy.node is not None
    assert render_node(session.events, legacy.node) == f"{PRIOR_STATE_LABEL}\n{legacy.text}"
    other = append_chat_turn(session, "x", "y")
    bare = replace_with_checkpoint(session, other.surface[0], other.surface[-1], "bare text")
    assert render_node(session.events, bare) == f"{PRIOR_STATE_LABEL}\nbare text"


def test_empty_assistant_messages_and_log_only_events_render_nothing():
    session = new_session(MemoryStore())
    turn = append_chat_turn(session, "q", "a")
    empty = session.append(
        AssistantMessage(turn=turn.turn, step=2, message=assistant_message())
    ).seq
    shadowed = [*turn.surface, empty]
    compaction_bracket(session, shadowed, "summary")
    (checkpoint,) = list_checkpoints(session.events)
    assert render_span(session.events, checkpoint) == ("User: q", "Assistant: a")
    assert render_node(session.events, empty) is None
    assert render_node(session.events, turn.turn_start) is None


def test_the_cache_renders_a_span_once_per_summary_event():
    passes = two_passes()
    events = passes.session.events
    cache = SpanCache()
    checkpoint = resolve_checkpoint(events, passes.state1.id)
    first = cache.span(events, checkpoint)
    assert first == render_span(events, checkpoint)
    assert cache.span(events, resolve_checkpoint(events, passes.state1.id)) is first
    assert len(cache) == 1


def test_the_cache_never_serves_another_logs_span_under_the_same_seq():
    cache = SpanCache()
    one, two = two_passes(), two_passes()
    a = cache.span(one.session.events, resolve_checkpoint(one.session.events, one.state1.id))
    b = cache.span(two.session.events, resolve_checkpoint(two.session.events, two.state1.id))
    assert a == b and a is not b  # same seq, different log: rendered again


def test_the_cache_drops_the_least_recently_used_span_beyond_its_size():
    passes = two_passes()
    events = passes.session.events
    cache = SpanCache(max_spans=2)
    ids = [c.id for c in list_checkpoints(events)]
    spans = [cache.span(events, resolve_checkpoint(events, i)) for i in ids[:2]]
    assert cache.span(events, resolve_checkpoint(events, ids[0])) is spans[0]  # ids[0] is fresh
    cache.span(events, resolve_checkpoint(events, ids[2]))  # evicts ids[1]
    assert len(cache) == 2
    assert cache.span(events, resolve_checkpoint(events, ids[0])) is spans[0]
    assert cache.span(events, resolve_checkpoint(events, ids[1])) is not spans[1]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["span", "lowered"]), st.integers(0, 10)), max_size=30),
    st.integers(1, 3),
    st.integers(1, 400),
)
def test_cached_spans_and_lowered_text_equal_a_fresh_render_and_sizes_add_up(
    calls, max_spans, max_chars
):
    passes = two_passes()
    events = passes.session.events
    checkpoints = list_checkpoints(events)
    cache = SpanCache(max_spans=max_spans, max_chars=max_chars)
    for what, pick in calls:
        checkpoint = checkpoints[pick % len(checkpoints)]
        fresh = render_span(events, checkpoint)
        if what == "span":
            assert cache.span(events, checkpoint) == fresh
        else:
            assert cache.lowered(events, checkpoint) == tuple(m.lower() for m in fresh)
        kept = list(cache._spans.values())
        assert cache._chars == sum(entry.size() for entry in kept)
        assert len(kept) == 1 or (len(kept) <= max_spans and cache._chars <= max_chars)


def test_lowered_text_is_computed_once_per_cached_span():
    passes = two_passes()
    events = passes.session.events
    cache = SpanCache()
    checkpoint = resolve_checkpoint(events, passes.state1.id)
    first = cache.lowered(events, checkpoint)
    assert cache.lowered(events, resolve_checkpoint(events, passes.state1.id)) is first
    assert NEEDLE.lower() in "\n".join(first)


def test_a_tool_result_replaced_by_anything_but_the_pruner_renders_as_itself():
    """Only a pruned copy (a replace sourced from ``compaction/prune``) renders as its original;
    another replace of a tool result (a plugin's rewrite) is what it says."""
    session = new_session(MemoryStore())
    turn = append_tool_turn(session, calls=[("read_file", "{}", "the original text")])
    (result,) = turn.results
    event = session.events[result]
    assert isinstance(event, ToolResultEvent)
    rewrite = session.append(
        ToolResult(
            turn=event.data.turn,
            step=event.data.step,
            message=tool_result_message(event.data.message.content[0].tool_call_id, "rewritten"),
        ),
        surface_op=ReplaceOp(start=result, end=result),
        source_event_seqs=[result],
    ).seq
    assert render_node(session.events, rewrite) == "Tool result: rewritten"
    assert render_node(session.events, result) == "Tool result: the original text"


def _upstream_prune(session, result: int, *, with_prune: bool = True) -> int:
    """The TypeScript harness's shape of a pruned copy: its ``compaction/prune``, then (maybe
    after other prunes and copies) the copy, sourced from the original alone."""
    event = session.events[result]
    if with_prune:
        session.append(
            CompactionPrune(
                shadowed_range=(result, result), shadowed_seqs=(result,), shadowed_token_count=5
            )
        )
    call_id = event.data.message.content[0].tool_call_id
    return session.append(
        ToolResult(
            turn=event.data.turn,
            step=event.data.step,
            message=tool_result_message(call_id, "the orig[… middle pruned …]"),
        ),
        surface_op=ReplaceOp(start=result, end=result),
        source_event_seqs=[result],
    ).seq


def test_a_pruned_copy_in_the_upstream_shape_renders_as_its_original():
    """An imported TypeScript-harness log cites no prune from its pruned copy (the prune event
    comes right before it): recall gave back the pruned copy, not the original."""
    session = new_session(MemoryStore())
    turn = append_tool_turn(
        session, calls=[("read_file", "{}", "the original text"), ("bash", "{}", "second original")]
    )
    first, second = turn.results
    session.append(
        CompactionPrune(
            shadowed_range=(first, first), shadowed_seqs=(first,), shadowed_token_count=5
        )
    )
    copy_of_second = _upstream_prune(session, second)  # prune 2, copy 2 between prune 1, copy 1
    copy_of_first = _upstream_prune(session, first, with_prune=False)
    assert render_node(session.events, copy_of_first) == "Tool result: the original text"
    assert render_node(session.events, copy_of_second) == "Tool result: second original"
    other = append_tool_turn(session, calls=[("read_file", "{}", "third original")])
    session.append(
        CompactionPrune(
            shadowed_range=(first, first), shadowed_seqs=(first,), shadowed_token_count=5
        )
    )  # a prune of another result, then a chat turn: no prune stands right before the copy
    append_chat_turn(session, "more", "ok")
    unrelated = _upstream_prune(session, other.results[0], with_prune=False)
    assert render_node(session.events, unrelated) == "Tool result: the orig[… middle pruned …]"


_LINES = st.lists(st.text(alphabet="ab \t", max_size=2500), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(_LINES, st.booleans())
def test_long_text_splits_into_parts_that_put_back_together_are_the_text(lines, trailing):
    """Every part within ``PART_CHARS`` (plus its markers); a part ends at a line break when one
    falls in its last fifth, else at ``PART_CHARS`` with the next part repeating its last
    ``PART_OVERLAP`` characters; unmarked and joined without the repeats, the parts are the
    text."""
    text = "\n".join(lines) + ("\n" if trailing else "")
    parts = split_parts(text)
    count = len(parts)
    joined, overlap = "", 0
    for number, part in enumerate(parts, start=1):
        prefix = f"[part {number} of {count}]\n" if number > 1 else ""
        suffix = CONTINUED if number < count else ""
        assert part.startswith(prefix) and part.endswith(suffix)
        piece = part[len(prefix) : len(part) - len(suffix)]
        assert len(piece) <= PART_CHARS and (piece or count == 1)
        assert piece.startswith(joined[len(joined) - overlap :])
        joined += piece[overlap:]
        overlap = 0
        if number < count and not piece.endswith("\n"):
            assert "\n" not in piece[-PART_BREAK_ZONE:] and len(piece) == PART_CHARS
            overlap = PART_OVERLAP
    assert joined == text
    assert count == 1 or len(text) > PART_CHARS


def test_a_literal_across_a_cut_inside_a_long_line_is_found_whole_in_the_next_part():
    """One 9,000-character line: the cut falls inside it, and the next part starts
    ``PART_OVERLAP`` characters back, so a literal straddling the cut is in that part whole."""
    literal = "SPLIT_LITERAL_XYZ"
    line = "x" * (PART_CHARS - 8) + literal + "y" * 3000
    parts = split_parts(line)
    assert literal not in parts[0]
    assert literal in parts[1]
    session = new_session(MemoryStore())
    turn = append_tool_turn(session, calls=[("read_file", "{}", line)])
    compaction_bracket(session, turn.surface, "summary")
    found = search_history(session.events, "split_literal_xyz")
    assert found.meta is not None and found.meta["matched"] == 1
