"""``history_search`` cold and warm over a large shadowed log, against a bare scan in the same run.

The log is ``recallable.py``'s search log (``--mb`` MB of shadowed tool-result text in many
checkpoints, one planted needle). Timed, best of 3 where it says so:

* first search ever: the first query of a fresh ``HistorySearchTool`` with a span directory and
  no span file yet (renders and lower-cases every span, and stores the lower-cased spans);
* cold: the first query of another fresh tool (empty memory), as a new process runs it (a
  resumed agent): it reads the span file the first search stored (best of 3, each a new tool);
* warm: a later query on the same tool (spans and their lower-cased text are in memory);
* CLI path: ``search_history`` with a fresh cache on the same span file, as ``dsh recall
  search`` runs it once per process (best of 3);
* without a span file: a fresh tool without a span directory (what every cold search cost
  before span files);
* baseline: ``text.lower().find(query)`` over the same text concatenated (best of 3).

Targets: cold and warm <= 2x the baseline. Misses are reported, never an error exit.

Run: ``uv run python benchmarks/history_search.py [--mb 100] [--seed 1]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from dsh.recall import HistorySearchTool, SpanCache, search_history
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
    with tempfile.TemporaryDirectory(prefix="dsh-spans-") as spans:
        span_dir = Path(spans)

        def search(tool: HistorySearchTool) -> Any:
            output = asyncio.run(tool.run({"query": needle}, ctx))
            assert needle in output.text
            return output

        first = timed(lambda: search(HistorySearchTool(span_dir=span_dir)))[0]
        cold = min(timed(lambda: search(HistorySearchTool(span_dir=span_dir)))[0] for _ in range(3))
        tool = HistorySearchTool(span_dir=span_dir)
        search(tool)
        warm = min(timed(lambda: search(tool))[0] for _ in range(3))

        def cli_search() -> Any:
            cache = SpanCache()
            cache.use_file(span_dir / f"{session.id}.spans")
            return search_history(session.events, needle, cache=cache)

        cli = min(timed(cli_search)[0] for _ in range(3))
        file_mb = (span_dir / f"{session.id}.spans").stat().st_size / 1e6
    no_file = timed(lambda: search(HistorySearchTool()))[0]
    query = needle.lower()
    bare = min(timed(lambda: text.lower().find(query))[0] for _ in range(3))
    print(f"history_search over {len(text) / 1e6:.0f} MB shadowed, {len(session.events):,} events")
    print(f"span file: {file_mb:.0f} MB")
    print(f"baseline bare lower().find      {bare:8.3f} s")
    for name, seconds, target in (
        ("first search ever (stores)", first, None),
        ("cold (new tool, span file)", cold, 2),
        ("warm", warm, 2),
        ("CLI path (span file)", cli, 2),
        ("cold without a span file", no_file, None),
    ):
        verdict = ""
        if target is not None:
            ok = seconds <= target * bare
            verdict = f"  target <= {target}x {'PASS' if ok else 'MISS'}"
        print(f"{name:30s}  {seconds:8.3f} s   {seconds / bare:6.2f}x{verdict}")


if __name__ == "__main__":
    main()
