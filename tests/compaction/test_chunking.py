"""Property tests of the deterministic chunker (docs/compaction.md, "Layout")."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.compaction.recallable import SpanNode, chunk_span
from dsh.compaction.recallable.chunking import after_held, coarsen_chunks, plan_chunks

nodes_strategy = st.lists(
    st.builds(
        SpanNode,
        tokens=st.integers(min_value=1, max_value=900),
        clean_after=st.booleans(),
        turn_after=st.booleans(),
    ),
    min_size=1,
    max_size=60,
).map(lambda ns: [*ns[:-1], SpanNode(ns[-1].tokens, True, False)])


@settings(max_examples=300, deadline=None)
@given(nodes=nodes_strategy, chunk_tokens=st.integers(min_value=100, max_value=2000))
def test_chunks_cover_the_span_in_order_with_balanced_edges(nodes, chunk_tokens):
    chunks = chunk_span(nodes, chunk_tokens)
    assert chunks[0][0] == 0 and chunks[-1][1] == len(nodes)
    for (_, end), (start, _) in itertools.pairwise(chunks):
        assert end == start
    for start, end in chunks:
        assert start < end
        assert nodes[end - 1].clean_after


@settings(max_examples=300, deadline=None)
@given(nodes=nodes_strategy, chunk_tokens=st.integers(min_value=100, max_value=2000))
def test_an_index_chunk_exceeds_the_budget_only_when_balance_forces_it(nodes, chunk_tokens):
    for start, end in chunk_span(nodes, chunk_tokens)[:-1]:
        total = sum(n.tokens for n in nodes[start:end])
        if total > chunk_tokens and end - start > 1:
            # no balanced cut existed inside the budget
            running = 0
            for i in range(start, end - 1):
                running += nodes[i].tokens
                if running > chunk_tokens:
                    break
                assert not nodes[i].clean_after


@settings(max_examples=200, deadline=None)
@given(nodes=nodes_strategy, chunk_tokens=st.integers(min_value=100, max_value=2000))
def test_chunking_is_deterministic(nodes, chunk_tokens):
    assert chunk_span(nodes, chunk_tokens) == chunk_span(list(nodes), chunk_tokens)


def test_the_trailing_slice_is_the_last_turn_when_it_fits():
    turn = [SpanNode(50, True, False), SpanNode(50, False, False), SpanNode(50, True, True)]
    nodes = turn * 3
    nodes[-1] = SpanNode(50, True, False)
    chunks = chunk_span(nodes, 200)
    assert chunks[-1] == (6, 9)


def test_a_single_oversized_node_is_its_own_chunk():
    nodes = [
        SpanNode(50, True, True),
        SpanNode(5000, True, True),
        SpanNode(50, True, True),
        SpanNode(60, True, False),
    ]
    chunks = chunk_span(nodes, 200)
    assert (1, 2) in chunks


@settings(max_examples=300, deadline=None)
@given(
    nodes=nodes_strategy,
    chunk_tokens=st.integers(min_value=100, max_value=2000),
    data=st.data(),
)
def test_no_chunk_reaches_across_the_open_turns_prompt(nodes, chunk_tokens, data):
    """``held``: where the open turn's prompt was taken out of the span (it is a turn
    boundary: the cut before it is balanced). Every chunk before it is an index chunk, the
    state slice is everything after it, and coarsening to any number of stubs (the ladder)
    leaves that so; what falls out of the pass stays verbatim."""
    held = data.draw(st.integers(min_value=0, max_value=len(nodes) - 1))
    if held:
        nodes[held - 1] = SpanNode(nodes[held - 1].tokens, True, True)
    checkpoints = data.draw(st.lists(st.booleans(), min_size=len(nodes), max_size=len(nodes)))
    chunks = plan_chunks(nodes, chunk_tokens, checkpoints, 150, held=held)
    assert chunks[-1] == (held, len(nodes))
    for start, end in chunks[:-1]:
        assert end <= held and nodes[end - 1].clean_after
        assert not all(checkpoints[start:end]) and sum(n.tokens for n in nodes[start:end]) >= 150
    for (_, end), (start, _) in itertools.pairwise(chunks[:-1]):
        assert end == start
    tokens = [sum(n.tokens for n in nodes[s:e]) for s, e in chunks]
    for stubs in range(len(chunks)):
        coarse = after_held(coarsen_chunks(chunks, tokens, stubs), held)
        assert coarse[-1] == (held, len(nodes))
        assert all(end <= held for _, end in coarse[:-1])


def test_a_last_chunk_before_the_prompt_too_small_for_a_stub_joins_the_one_before_it():
    def node(tokens: int, turn_after: bool = False) -> SpanNode:
        return SpanNode(tokens, True, turn_after)

    nodes = [node(300), node(300, True), node(40, True), node(500), node(500)]
    chunks = plan_chunks(nodes, 400, [False] * 5, 100, held=3)
    assert chunks == [(0, 1), (1, 3), (3, 5)]  # the 40-token turn joined the stub before it
    alone = plan_chunks([node(40, True), node(500)], 400, [False] * 2, 100, held=1)
    assert alone == [(1, 2)]  # nothing to join: it stays out of the pass
