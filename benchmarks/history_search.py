"""``history_search`` cold and warm over a large shadowed log, against a bare scan in the same run.

The log is ``recallable.py``'s search log (``--mb`` MB of shadowed tool-result text in many
checkpoints, one planted needle). Timed, best of 3 where it says so:

* cold: the first query of a fresh ``HistorySearchTool`` (renders and lower-cases every span);
* warm: a later query on the same tool (spans and their lower-cased text are cached);
* CLI path: ``search_history`` with no cache, as ``dsh recall search`` runs it once per process;
* baseline: ``text.lower().find(query)`` over the same text concatenated (best of 3).

Target: warm <= 2x the baseline; cold is reported with its ratio. Misses are reported, never an
error exit.

Run: ``uv run python benchmarks/history_search.py [--mb 100] [--seed 1]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from dsh.recall import HistorySearchTool, search_history
from dsh.tools.base import ToolContext
from recallable import build_search_log


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    session, text, needle = build_search_log(args.mb, args.seed)
    ctx = ToolContext(
        workspace=Path("."), session_id=session.id, call_id="s", history=session.events
    )
    tool = HistorySearchTool()
    cold, output = timed(lambda: asyncio.run(tool.run({"query": needle}, ctx)))
    assert needle in output.text
    warm = min(timed(lambda: asyncio.run(tool.run({"query": needle}, ctx)))[0] for _ in range(3))
    cli = timed(lambda: search_history(session.events, needle))[0]
    query = needle.lower()
    bare = min(timed(lambda: text.lower().find(query))[0] for _ in range(3))
    print(f"history_search over {len(text) / 1e6:.0f} MB shadowed, {len(session.events):,} events")
    print(f"baseline bare lower().find      {bare:8.3f} s")
    for name, seconds in (
        ("cold (first query)", cold),
        ("warm", warm),
        ("CLI path (no cache)", cli),
    ):
        verdict = ""
        if name == "warm":
            verdict = "  target <= 2x PASS" if seconds <= 2 * bare else "  target <= 2x MISS"
        print(f"{name:30s}  {seconds:8.3f} s   {seconds / bare:6.2f}x{verdict}")


if __name__ == "__main__":
    main()
