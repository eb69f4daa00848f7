"""Timing helpers the benchmark scripts share: the best of several runs, so a loaded machine's
slow runs do not count against the code being measured."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


def best_of(runs: int, work: Callable[[], object], *, collect: bool = False) -> float:
    """The shortest wall time, in seconds, of ``runs`` calls of ``work``; with ``collect``, the
    garbage collector runs before each call so one call's garbage is not timed in the next."""
    best = float("inf")
    for _ in range(runs):
        if collect:
            gc.collect()
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best
