"""``history_search`` cold and warm over a large shadowed log, against a bare scan in the same run.

The log is ``recallable.py``'s search log (``--mb`` MB of shadowed tool-result text in many
checkpoints, one planted needle). Timed, best of 3 where it says so:

* first search ever: the first query of a fresh ``HistorySearchTool`` with a span directory and
  no span file yet (renders and lower-cases every span, and stores the lower-cased spans);
* cold: the first query of another fresh tool (empty memory), as a new process runs it (a
  resumed agent): it reads the span file the first search stored;
* warm: a later query on the same tool (spans and their lower-cased text are in memory);
* CLI path: ``search_history`` with a fresh cache on the same span file, as ``dsh recall
  search`` runs it once per process;
* without a span file: a fresh tool without a span directory (what every cold search cost
  before span files);
* by words: later queries on the warm tool that nothing matches literally, so their words are
  looked for on their own — rare words (``heartbeat quasar lost``: one message holds them) and
  common ones (``workers latency retried``: every message begins words with them);
* baseline: ``text.lower().find(query)`` over the same text concatenated.

The machine is shared, so each of ``--rounds`` rounds times the baseline and then every row once
(a new span directory per round); a row's ratio is its time over the same round's baseline, and
the median and range of times and ratios are printed with the load average. Targets: the median
ratio of cold, warm and the CLI path <= 2x. Misses are reported, never an error exit.

Run: ``uv run python benchmarks/history_search.py [--mb 100] [--seed 1] [--rounds 5]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _search_log import build_search_log
from dsh.recall import HistorySearchTool, SpanCache, search_history
from dsh.tools.base import ToolContext


def timed(fn: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def spread(values: list[float], fmt: str) -> str:
    """``median (min–max)`` of ``values``."""
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    session, text, needle = build_search_log(args.mb, args.seed)
    ctx = ToolContext(
        workspace=Path("."), session_id=session.id, call_id="s", history=session.events
    )
    query = needle.lower()

    def search(tool: HistorySearchTool) -> Any:
        output = asyncio.run(tool.run({"query": needle}, ctx))
        assert needle in output.text
        return output

    def by_words(tool: HistorySearchTool, query: str, hits: int | None) -> Any:
        output = asyncio.run(tool.run({"query": query}, ctx))
        assert output.meta["matched"] == 0 and output.meta.get("byWords", 0) >= 1
        assert hits is None or output.meta["byWords"] == hits
        return output

    rows = ("first search ever (stores)", "cold (new tool, span file)", "warm")
    rows += ("CLI path (span file)", "cold without a span file")
    rows += ("warm, by words (rare)", "warm, by words (common)")
    times: dict[str, list[float]] = {"baseline": [], **{row: [] for row in rows}}
    file_mb = 0.0
    load_before = os.getloadavg()[0]

    def one_round(span_dir: Path) -> list[float]:
        """The baseline's time and each row's, in this order."""
        spans_path = span_dir / f"{session.id}.spans"
        tool = HistorySearchTool(span_dir=span_dir)

        def cli_search() -> Any:
            cache = SpanCache()
            cache.use_file(spans_path)
            return search_history(session.events, needle, cache=cache)

        figures = [
            timed(lambda: text.lower().find(query)),
            timed(lambda: search(HistorySearchTool(span_dir=span_dir))),
            timed(lambda: search(HistorySearchTool(span_dir=span_dir))),
        ]
        search(tool)
        figures += [timed(lambda: search(tool)), timed(cli_search)]
        figures.append(timed(lambda: search(HistorySearchTool())))
        figures.append(timed(lambda: by_words(tool, "heartbeat quasar lost", 1)))
        figures.append(timed(lambda: by_words(tool, "workers latency retried", None)))
        return figures

    for _ in range(args.rounds):  # round-robin: the machine's load hits baseline and subjects
        with tempfile.TemporaryDirectory(prefix="dsh-spans-") as spans:
            for name, seconds in zip(times, one_round(Path(spans)), strict=True):
                times[name].append(seconds)
            file_mb = (Path(spans) / f"{session.id}.spans").stat().st_size / 1e6
    load_after = os.getloadavg()[0]
    print(f"history_search over {len(text) / 1e6:.0f} MB shadowed, {len(session.events):,} events")
    print(
        f"span file: {file_mb:.0f} MB; {args.rounds} rounds round-robin; "
        f"load average {load_before:.1f} -> {load_after:.1f}"
    )
    print(f"baseline bare lower().find      {spread(times['baseline'], '.3f')} s")
    targets = {rows[1]: 2, rows[2]: 2, rows[3]: 2}
    for name in rows:
        ratios = [t / b for t, b in zip(times[name], times["baseline"], strict=True)]
        verdict = ""
        if name in targets:
            ok = statistics.median(ratios) <= targets[name]
            verdict = f"  target <= {targets[name]}x {'PASS' if ok else 'MISS'}"
        print(
            f"{name:30s}  {spread(times[name], '.3f')} s   ratio {spread(ratios, '.2f')}{verdict}"
        )


if __name__ == "__main__":
    main()
