"""Deterministic chunking of a compactable span (docs/compaction.md, "Layout"). A pure function
of its inputs.

The span is a run of surface nodes, each with a heuristic price, a flag saying whether the cut
right after it is clean (``dsh.surface.cuts``: no tool call left open, no prompt parted from the
notes its ``@path`` mentions attached), and a flag saying whether a new turn starts right after
it (the next node is a person's prompt). The result is a list of half-open index
ranges covering the span exactly, in order: index chunks first, the trailing (state) slice last.

Rules:
- every edge is a clean cut (a stub slice never ends between a prompt and its attachments);
- the trailing slice starts at the last turn boundary when that slice fits in ``chunk_tokens``
  (about one turn), else at the last clean cut that keeps it within ``chunk_tokens`` — as close
  to the retain boundary as clean cuts allow (an oversized last exchange is the slice alone);
- index chunks accumulate toward ``chunk_tokens``; within the reachable cuts a turn boundary in
  the second half of the budget wins, else the furthest clean cut; a chunk with no clean
  cut inside the budget grows to the next clean cut (one oversized node is its own chunk);
- ``fold_checkpoint_chunks``: an index chunk made of checkpoint nodes alone (a superseded state)
  joins the chunk after it, so it never becomes a stub of its own.
- ``fold_small_chunks``: an index chunk priced below a stub's expected size joins the chunk
  after it (the last one joins the state slice): its stub could not shrink it.
- ``coarsen_chunks``: when fewer stubs must do (the stub region is full), adjacent index chunks
  merge at their existing edges into runs of about equal size.
- ``held``: a span the open turn's prompt was taken out of (``dsh.compaction.open_prompt``) is
  chunked up to it, every one of those chunks an index chunk (a last one too small for a stub,
  or of checkpoints alone, joins the one before it, or stays out of the pass when there is
  none), and everything after it is the state slice; no range reaches across it
  (``after_held``: when fewer stubs must do and none is left, what the ladder would merge into
  the state slice from before the prompt stays out of the pass).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SpanNode:
    tokens: int
    clean_after: bool
    """A cut right after this node is clean (``dsh.surface.cuts.clean_cut_after``)."""
    turn_after: bool
    """A person's prompt follows this node (a turn boundary)."""


def trailing_start(nodes: Sequence[SpanNode], chunk_tokens: int) -> int:
    """Index where the trailing (state) slice starts; 0 means the whole span is one slice."""
    n = len(nodes)
    tail = 0
    best_clean = 0
    for cut in range(n - 1, 0, -1):  # cut between nodes[cut - 1] and nodes[cut]
        tail += nodes[cut].tokens
        if tail > chunk_tokens and best_clean:
            break
        before = nodes[cut - 1]
        if not before.clean_after:
            continue
        if before.turn_after and tail <= chunk_tokens:
            return cut
        if best_clean == 0:
            best_clean = cut  # the nearest clean cut: an oversized last node stands alone
        if tail > chunk_tokens:
            break
    return best_clean


def chunk_span(nodes: Sequence[SpanNode], chunk_tokens: int) -> list[tuple[int, int]]:
    """Half-open ranges covering ``nodes``: index chunks, then the trailing state slice."""
    n = len(nodes)
    if n == 0:
        return []
    if not nodes[-1].clean_after:
        raise ValueError("a compactable span must end at a clean cut")
    trail = trailing_start(nodes, chunk_tokens)
    chunks: list[tuple[int, int]] = []
    start = 0
    while start < trail:
        end = _next_edge(nodes, start, trail, chunk_tokens)
        chunks.append((start, end))
        start = end
    chunks.append((trail, n))
    return chunks


def plan_chunks(
    nodes: Sequence[SpanNode],
    chunk_tokens: int,
    is_checkpoint: Sequence[bool],
    minimum: int,
    *,
    held: int | None = None,
) -> list[tuple[int, int]]:
    """``chunk_span``, then ``fold_checkpoint_chunks`` and ``fold_small_chunks`` (``minimum``:
    a stub's expected price). ``held``: the index where the open turn's prompt was taken out of
    the span (see the module's rules)."""
    tokens = [node.tokens for node in nodes]
    if held is None:
        chunks = chunk_span(nodes, chunk_tokens)
        chunks = fold_checkpoint_chunks(chunks, is_checkpoint)
        return fold_small_chunks(chunks, tokens, minimum)
    # Before the prompt every chunk is an index chunk: the folds run there as if its last
    # chunk were the state slice, then that last chunk, when it is one no stub should be made
    # of, joins the chunk before it (with none, it stays out of the pass). The last node before
    # the prompt: chunk_span never reads its turn flag.
    before = chunk_span(nodes[:held], chunk_tokens)
    before = fold_small_chunks(fold_checkpoint_chunks(before, is_checkpoint), tokens, minimum)
    if before:
        start, end = before[-1]
        if all(is_checkpoint[start:end]) or sum(tokens[start:end]) < minimum:
            before = [*before[:-2], (before[-2][0], end)] if len(before) > 1 else []
    return [*before, (held, len(nodes))]


def after_held(chunks: list[tuple[int, int]], held: int | None) -> list[tuple[int, int]]:
    """``chunks`` with the state slice starting no earlier than ``held``: what was merged into
    it from before the prompt (``coarsen_chunks`` with no stub) stays out of the pass,
    verbatim."""
    if held is None or not chunks or chunks[-1][0] >= held:
        return chunks
    return [*chunks[:-1], (held, chunks[-1][1])]


def _next_edge(nodes: Sequence[SpanNode], start: int, limit: int, chunk_tokens: int) -> int:
    """End (exclusive) of the index chunk that begins at ``start``; never beyond ``limit``."""
    total = 0
    furthest_clean = 0
    preferred = 0
    for end in range(start + 1, limit + 1):
        total += nodes[end - 1].tokens
        fits = total <= chunk_tokens or end == start + 1
        if not fits:
            break
        if nodes[end - 1].clean_after or end == limit:
            furthest_clean = end
            if nodes[end - 1].turn_after and total * 2 >= chunk_tokens:
                preferred = end
    if preferred:
        return preferred
    if furthest_clean:
        return furthest_clean
    # Nothing clean within the budget: grow to the next clean cut (``limit`` is one).
    return next(
        end for end in range(start + 1, limit + 1) if nodes[end - 1].clean_after or end == limit
    )


def fold_checkpoint_chunks(
    chunks: Sequence[tuple[int, int]], is_checkpoint: Sequence[bool]
) -> list[tuple[int, int]]:
    """``chunks`` with every index chunk whose nodes are all checkpoints merged into the chunk
    after it (the last chunk — the state region — absorbs one before it)."""
    return _fold_forward(chunks, lambda start, end: all(is_checkpoint[start:end]))


def fold_small_chunks(
    chunks: Sequence[tuple[int, int]], tokens: Sequence[int], minimum: int
) -> list[tuple[int, int]]:
    """``chunks`` with every index chunk priced below ``minimum`` (``tokens``: each node's
    price) merged into the chunk after it — the last index chunk into the state slice — since
    its stub could not be smaller than what it replaces (a lone prompt before an oversized last
    exchange would become a stub bigger than itself). Edges stay a subset of ``chunks``'."""
    return _fold_forward(chunks, lambda start, end: sum(tokens[start:end]) < minimum)


def _fold_forward(
    chunks: Sequence[tuple[int, int]], folds: Callable[[int, int], bool]
) -> list[tuple[int, int]]:
    """``chunks`` with every index chunk for which ``folds(start, end)`` holds — a chunk
    carried forward counts from where the carry began — merged into the chunk after it; the
    last chunk (the state slice) is never folded away."""
    folded: list[tuple[int, int]] = []
    carry: int | None = None
    for position, (start, end) in enumerate(chunks):
        begin = start if carry is None else carry
        last = position == len(chunks) - 1
        if not last and folds(begin, end):
            carry = begin
            continue
        folded.append((begin, end))
        carry = None
    return folded


def coarsen_chunks(
    chunks: Sequence[tuple[int, int]], tokens: Sequence[int], stubs: int
) -> list[tuple[int, int]]:
    """``chunks`` (index chunks, then the state slice) with the index chunks merged into
    ``stubs`` runs of about equal size (``tokens``: each chunk's price), cutting only at the
    existing edges; the state slice is kept. With ``stubs`` 0 the whole span is the state
    slice; with as many stubs as index chunks, ``chunks`` unchanged."""
    index = list(chunks[:-1])
    if stubs >= len(index):
        return list(chunks)
    if stubs < 1:
        return [(chunks[0][0], chunks[-1][1])]
    total = sum(tokens[: len(index)])
    runs: list[tuple[int, int]] = []
    start = 0
    size = 0
    for position, (_, end) in enumerate(index):
        size += tokens[position]
        runs_left = stubs - len(runs) - 1
        if runs_left == 0:
            continue  # the last run takes the rest
        chunks_left = len(index) - position - 1
        if size * stubs >= total * (len(runs) + 1) or chunks_left == runs_left:
            runs.append((index[start][0], end))
            start = position + 1
    runs.append((index[start][0], index[-1][1]))
    return [*runs, chunks[-1]]
