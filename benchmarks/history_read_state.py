"""``history_read`` of a state checkpoint in a long compacted session, against reading an index
checkpoint of the same session in the same run.

A state's header says which checkpoints hold the rest of the range it folds; finding them once
walked every checkpoint's chain of replaced checkpoints, so the read grew with the square of the
session (3.3 s at 100k events, 1,197 checkpoints, in an audit; an index read stayed ~0.1 ms).
Each session is built here: two-step tool turns of 11 events (``compaction_pass_scale``'s), a
real recallable pass (the extractive summariser) every 20 turns, until ``--events`` events.

For each size it prints the CPU time of reading (first page, the session's per-type index given
as the tools and ``dsh recall`` give it) the newest state and the newest rollup (an index
checkpoint heading the chain of every older stub), both with the tool's warm span cache, and
the rollup with none (``dsh recall read``, one read per process), each beside the baseline (the
newest index checkpoint, read with the warm cache) and their ratio; then how each grows from
the smallest size to each larger one against how the session grows. Target: no read grows
faster than the session (growth ratio ≤ 1× the size ratio); the warm reads should not grow at
all (a state's header names the checkpoints of its pass, found without walking older ones; the
span behind a rollup is walked once per cache), the rollup's first read walks its chain.
Misses are reported, never an error exit. CPU time (``time.process_time``), best of
``--repeat``.

Run: ``uv run python benchmarks/history_read_state.py [--events 2000 20000] [--repeat 5]``
(20,000 events take about a minute to build on a busy 2-core machine.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from compaction_pass_scale import WINDOW, _engine, _turn
from dsh.recall.checkpoints import conversation_span, list_checkpoints
from dsh.recall.render import SpanCache
from dsh.recall.tools import read_checkpoint
from dsh.store import JsonlStore
from dsh.surface import Session

PASS_EVERY = 20


def build(root: Path, events: int) -> Session:
    session = Session.create(JsonlStore(root / "home"), cwd=root)
    engine = _engine(session)
    turn = 0
    while len(session.events) < events:
        _turn(session, turn, "log")
        turn += 1
        if turn % PASS_EVERY == 0:
            asyncio.run(engine.compact_now(window=WINDOW))
    return session


def best_cpu(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.process_time()
        fn()
        times.append(time.process_time() - began)
    return min(times)


def measure(root: Path, size: int, repeat: int) -> tuple[int, int, dict[str, float], float]:
    """(events, checkpoints, {read: s}, index read s) for a session of ``size`` events."""
    session = build(root, size)
    events = session.events
    checkpoints = list_checkpoints(events, session)
    state = [c for c in checkpoints if c.kind == "state"][-1]
    index = [c for c in checkpoints if c.kind == "index"][-1]
    # the newest of those that reach back furthest: the rollup heading every older stub
    rollup = min(
        (c for c in checkpoints if c.kind == "index"),
        key=lambda c: (conversation_span(events, c.shadowed_seqs)[0], -c.seq),
    )
    cache = SpanCache()

    def read(checkpoint: str, spans: SpanCache | None = cache) -> object:
        return read_checkpoint(events, checkpoint, 0, cache=spans, index=session)

    for checkpoint in (state, index, rollup):
        read(checkpoint.id)  # warm the span cache
    figures = {
        "state": best_cpu(lambda: read(state.id), repeat),
        "rollup": best_cpu(lambda: read(rollup.id), repeat),
        "rollup, first": best_cpu(lambda: read(rollup.id, None), repeat),
    }
    index_s = best_cpu(lambda: read(index.id), repeat)
    session.close()
    return len(events), len(checkpoints), figures, index_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"history_read of a state checkpoint; load average {os.getloadavg()[0]:.1f}")
    rows: list[tuple[int, dict[str, float]]] = []
    for size in sorted(args.events):
        with tempfile.TemporaryDirectory() as tmp:
            events, checkpoints, figures, index_s = measure(Path(tmp), size, args.repeat)
        rows.append((events, figures))
        cells = "  ".join(
            f"{name} {seconds * 1000:7.2f} ms ({seconds / max(index_s, 1e-9):6.1f}x)"
            for name, seconds in figures.items()
        )
        print(
            f"{events:>8,} events {checkpoints:>5} checkpoints  index (baseline) "
            f"{index_s * 1000:5.2f} ms  {cells}"
        )
    (small, small_figures), *larger = rows
    for size, figures in larger:
        scale = size / small
        for name, seconds in figures.items():
            growth = seconds / max(small_figures[name], 1e-9)
            verdict = "ok" if growth <= scale else "MISSED"
            print(
                f"{small:,} → {size:,} events ({scale:.1f}x): {name} read grew {growth:.1f}x "
                f"(target ≤ {scale:.1f}x) {verdict}"
            )


if __name__ == "__main__":
    sys.exit(main())
