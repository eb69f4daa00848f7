"""An index chunk too small for its stub to shrink it joins the chunk after it (the last one
joins the state slice): no stub is bigger than what it replaces (docs/compaction.md, "Layout")."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from dsh.compaction.recallable.chunking import fold_small_chunks
from tests.agent.conftest import run
from tests.compaction.test_recallable import assert_layout, engine_for, long_session
from tests.helpers import append_tool_turn


@given(
    st.lists(st.lists(st.integers(1, 60), min_size=1, max_size=4), min_size=1, max_size=10),
    st.integers(0, 150),
)
def test_small_index_chunks_fold_forward_and_the_cover_stays_exact(shape, minimum):
    chunks, tokens, start = [], [], 0
    for prices in shape:
        chunks.append((start, start + len(prices)))
        tokens.extend(prices)
        start += len(prices)
    folded = fold_small_chunks(chunks, tokens, minimum)
    assert folded[0][0] == 0 and folded[-1][1] == start
    assert all(a[1] == b[0] for a, b in itertools.pairwise(folded))
    assert {b for _, b in folded} <= {b for _, b in chunks}
    assert folded[-1][1] == chunks[-1][1]  # the state slice is never folded away
    assert all(sum(tokens[a:b]) >= minimum for a, b in folded[:-1])
    if all(sum(tokens[a:b]) >= minimum for a, b in chunks[:-1]):
        assert folded == chunks  # nothing small: nothing changes


def test_a_lone_prompt_before_an_oversized_exchange_joins_the_state_not_a_stub_of_its_own():
    session = long_session(turns=4)
    prompt = append_tool_turn(
        session,
        "go",
        calls=[("read_file", '{"path":"big.txt"}', "row of output data\n" * 160)],
        final="the big file holds " + "rows and more rows " * 80,
    ).user
    result = run(engine_for(session).compact_now(window=100_000))
    assert result is not None
    assert_layout(session)
    for ref in result.checkpoints:
        if ref.kind == "index":
            assert session.node_tokens(ref.checkpoint_seq) < ref.shadowed_tokens
    state = result.checkpoints[-1]
    assert state.kind == "state" and prompt in state.shadowed_seqs
