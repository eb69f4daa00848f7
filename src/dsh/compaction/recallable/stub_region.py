"""The ladder a pass climbs when its new stubs would overflow the stub region's share of the
window (docs/compaction.md, "The degradation ladder"; the share is
``RecallableBackend.stub_budget``).

A rollup rewrites the head of every later request (one cache miss of the whole region), so the
ladder reaches for it last and then makes it count:

1. The new stubs fit: the pass commits them as chunked.
2. Fewer, coarser stubs fit beside the frozen ones — adjacent chunks merged
   (``coarsen_chunks``): the pass commits the most that fit and the head stays byte-stable.
3. Not one stub fits: the oldest stubs are rolled up by code, the fewest that bring the region
   (with the new stubs) down to half its share, so several passes fit before the next rollup;
   when no rollup gets that far, all of them with one new stub, if that fits the share.
4. Nothing fits: the pass writes no new stub, only the state after the frozen boundary, and
   says why in the log — rolling every leading stub up all the same when a later pass, rolling
   that rollup up again to its own footer, would find room for a stub beside it (a session
   whose window shrank under many stubs indexes again; in a small share this alternates with
   passes that add a stub).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from dsh.compaction.recallable.chunking import coarsen_chunks
from dsh.compaction.recallable.rollup import (
    reroll_tokens,
    rollup_count,
    rollup_gains,
    rollup_keyword_chars,
)
from dsh.surface import Session, checkpoint_kind

log = logging.getLogger("dsh.compaction")

Chunks = list[tuple[int, int]]


def stub_region_tokens(session: Session) -> int:
    """Heuristic size of the committed index stubs on the surface."""
    return sum(
        session.node_tokens(seq)
        for seq in session.nodes
        if checkpoint_kind(session, seq) == "index"
    )


def fit_stub_region(
    session: Session,
    span: Sequence[int],
    chunks: Chunks,
    leading: Sequence[int],
    *,
    budget: int,
    stub_estimate: int,
) -> tuple[Chunks, Sequence[int]]:
    """The chunks a pass over ``span`` commits and the oldest of the ``leading`` stubs it rolls
    up, so the stub region stays within ``budget`` (each new stub priced ``stub_estimate``): the
    first rung of the ladder that works, trying the most new stubs first. A rollup is priced
    with the keyword cap it is made with (``rollup_keyword_chars`` of ``budget``)."""
    committed = stub_region_tokens(session)
    tokens = [sum(session.node_tokens(seq) for seq in span[begin:end]) for begin, end in chunks]
    most = len(chunks) - 1
    for stubs in range(most, 0, -1) if most else (0,):
        if committed + stubs * stub_estimate <= budget:
            return coarsen_chunks(chunks, tokens, stubs), ()
    leading_tokens = sum(session.node_tokens(seq) for seq in leading)
    keyword_chars = rollup_keyword_chars(budget)
    gains = rollup_gains(session, leading, max_chars=keyword_chars)
    for stubs in range(most, 0, -1) if most else (0,):
        count = rollup_count(leading_tokens + stubs * stub_estimate, gains, target=budget // 2)
        if count:
            return coarsen_chunks(chunks, tokens, stubs), leading[:count]
    whole = gains[-1] if gains else 0
    rolled = leading_tokens - whole
    if whole > 0 and rolled + min(most, 1) * stub_estimate <= budget:
        return coarsen_chunks(chunks, tokens, min(most, 1)), leading
    if (
        most
        and whole > 0
        and reroll_tokens(session, leading, max_chars=keyword_chars) + stub_estimate <= budget
    ):
        log.info(
            "stub region of %d tokens leaves no room for a new stub within its share (%d): "
            "this pass rolls every stub up and writes no new one; the next can roll that up "
            "again and index beside it",
            committed,
            budget,
        )
        return coarsen_chunks(chunks, tokens, 0), leading
    if most:
        log.info(
            "stub region of %d tokens would exceed its share (%d) and neither a rollup of the "
            "oldest stubs nor fewer new stubs make room: this pass writes one summary after "
            "the frozen boundary",
            committed + stub_estimate,
            budget,
        )
    return coarsen_chunks(chunks, tokens, 0), ()
