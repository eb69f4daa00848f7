"""The ladder a pass climbs when its new stubs would overflow the stub region's share of the
window (spec §4.4, "stub-region pressure"; the share is ``RecallableBackend.stub_budget``).

1. The new stubs fit: the pass commits them as chunked.
2. They fit once the oldest stubs are rolled up by code (``rollup_count``).
3. They fit as fewer, coarser stubs — adjacent chunks merged (``coarsen_chunks``) — with or
   without such a rollup: a small window still gets an index of what it compacts.
4. Nothing fits: the pass writes no new stub, only the state after the frozen boundary, and
   says why in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from dsh.compaction.recallable.chunking import coarsen_chunks
from dsh.compaction.recallable.rollup import rollup_count, rollup_gains
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
    first rung of the ladder that works, trying the most new stubs first."""
    committed = stub_region_tokens(session)
    leading_tokens = sum(session.node_tokens(seq) for seq in leading)
    tokens = [sum(session.node_tokens(seq) for seq in span[begin:end]) for begin, end in chunks]
    gains: list[int | None] | None = None  # computed once, when a rollup is first considered
    most = len(chunks) - 1
    for stubs in range(most, 0, -1) if most else (0,):
        incoming = stubs * stub_estimate
        if committed + incoming <= budget:
            return coarsen_chunks(chunks, tokens, stubs), ()
        gains = rollup_gains(session, leading) if gains is None else gains
        count = rollup_count(leading_tokens + incoming, gains, target=budget * 3 // 4, limit=budget)
        if count:
            return coarsen_chunks(chunks, tokens, stubs), leading[:count]
    if most:
        log.info(
            "stub region of %d tokens would exceed its share (%d) and neither a rollup of the "
            "oldest stubs nor fewer new stubs make room: this pass writes one summary after "
            "the frozen boundary",
            committed + most * stub_estimate,
            budget,
        )
    return coarsen_chunks(chunks, tokens, 0), ()
