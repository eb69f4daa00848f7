"""``history_read`` of a state checkpoint in a long compacted session, against reading an index
checkpoint of the same session in the same run.

A state's header says which checkpoints hold the rest of the range it folds; finding them once
walked every checkpoint's chain of replaced checkpoints, so the read grew with the square of the
session (3.3 s at 100k events, 1,197 checkpoints, in an audit; an index read stayed ~0.1 ms).
Each session is built here: two-step tool turns of 11 events (``compaction_pass_scale``'s), a
real recallable pass (the extractive summariser) every 20 turns, until ``--events`` events.

For each size it prints the CPU time of reading the newest state (first page, warm span cache),
the baseline (the newest index checkpoint, same cache), their ratio, and how the state read
grows from the smallest size to each larger one against how the session grows. Target: the
state read grows no faster than the session (growth ratio ≤ 1× the size ratio). Misses are
reported, never an error exit. CPU time (``time.process_time``), best of ``--repeat``.

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
from dsh.recall.checkpoints import list_checkpoints
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


def measure(root: Path, size: int, repeat: int) -> tuple[int, int, float, float]:
    """(events, checkpoints, state read s, index read s) for a session of ``size`` events."""
    session = build(root, size)
    events = session.events
    checkpoints = list_checkpoints(events)
    state = [c for c in checkpoints if c.kind == "state"][-1]
    index = [c for c in checkpoints if c.kind == "index"][-1]
    cache = SpanCache()
    read_checkpoint(events, state.id, 0, cache=cache)  # warm the span cache
    read_checkpoint(events, index.id, 0, cache=cache)
    state_s = best_cpu(lambda: read_checkpoint(events, state.id, 0, cache=cache), repeat)
    index_s = best_cpu(lambda: read_checkpoint(events, index.id, 0, cache=cache), repeat)
    session.close()
    return len(events), len(checkpoints), state_s, index_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"history_read of a state checkpoint; load average {os.getloadavg()[0]:.1f}")
    rows: list[tuple[int, float]] = []
    for size in sorted(args.events):
        with tempfile.TemporaryDirectory() as tmp:
            events, checkpoints, state_s, index_s = measure(Path(tmp), size, args.repeat)
        rows.append((events, state_s))
        print(
            f"{events:>8,} events {checkpoints:>5} checkpoints  state "
            f"{state_s * 1000:8.2f} ms  index (baseline) {index_s * 1000:6.2f} ms  "
            f"ratio {state_s / max(index_s, 1e-9):7.1f}x"
        )
    (small, small_s), *larger = rows
    for size, state_s in larger:
        growth, scale = state_s / max(small_s, 1e-9), size / small
        verdict = "ok" if growth <= scale else "MISSED"
        print(
            f"{small:,} → {size:,} events ({scale:.1f}x): state read grew {growth:.1f}x "
            f"(target ≤ {scale:.1f}x) {verdict}"
        )


if __name__ == "__main__":
    sys.exit(main())
