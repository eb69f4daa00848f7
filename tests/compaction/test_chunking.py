"""Property tests of the deterministic chunker (docs/compaction.md, "Layout")."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.compaction.recallable import SpanNode, chunk_span

nodes_strategy = st.lists(
    st.builds(
        SpanNode,
        tokens=st.integers(min_value=1, max_value=900),
        balanced_after=st.booleans(),
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
        assert nodes[end - 1].balanced_after


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
                assert not nodes[i].balanced_after


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
