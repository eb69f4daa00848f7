"""The context report (``context_report(…).public()``: the web's context panel, the TUI's
``/context``) kept current by a ``ContextFold``, against the report computed from the whole log
in the same run.

For each size a JSONL session of about that many events is prefilled as in ``scaling.py``
(chat-and-tool turns with provider usage; every 400 events the older surface is replaced by one
checkpoint, as compaction would, so the surface stays small while the log grows), given a
request header and opened for writing. Timed, each the median of ``--repeat`` runs:

- ``whole log`` (the baseline): the report as every ask computed it before the fold: every
  node's item made again, the figures counted over every event, every call priced again
  (``tests/agent/context_reference.py``, which the fold's tests hold it equal to);
- ``first report``: ``context_report`` with a new fold, what a face's first ask costs (the
  per-type index and the surface, not the log);
- ``after one turn``: one more turn appended (7 events, untimed), then ``context_report`` with
  the fold the earlier asks kept.

Printed: the load average before and after, each figure in ms per size with its ratio to that
size's whole-log baseline, and each figure's growth from the first size to the last. Reported,
never an error exit (the kept report is checked equal to the whole log's once, at the end).

Run: ``uv run python benchmarks/context_report.py [--sizes 10000,110000] [--repeat 21]``
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.agent.context_reference import whole_log_report

from dsh.agent.context_fold import ContextFold
from dsh.agent.context_report import context_report
from dsh.agent.prompt import system_prompt
from dsh.bench.runner import BENCH_ENVIRONMENT
from dsh.events import RequestConfig, RequestHeader, RequestHeaderBody
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tools.registry import ToolRegistry, default_tools
from scaling import _turn, prefill

ROUTE = ("scripted", "scripted")
WINDOW = 128_000


def load_average() -> str:
    """The 1/5/15-minute load averages, for the record (figures vary with the machine's load)."""
    return " ".join(f"{load:.2f}" for load in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


def median_ms(
    repeat: int, work: Callable[[], object], before: Callable[[], object] = list
) -> float:
    """The median of ``repeat`` timed runs of ``work`` in ms (``before`` runs untimed first)."""
    times = []
    for _ in range(repeat):
        before()
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def measure_size(root: Path, events: int, repeat: int) -> tuple[dict[str, float], int, int]:
    """The figures on a session of about ``events`` events; with its events and nodes."""
    (root / "ws").mkdir()
    store = JsonlStore(root / "home")
    session_id, turns = prefill(store, root / "ws", events)
    with Session.open(store, session_id, writable=True) as session:
        tools = tuple(ToolRegistry(default_tools()).specs())
        body = RequestHeaderBody(
            config=RequestConfig(provider=ROUTE[0], model=ROUTE[1]),
            system=system_prompt(root / "ws", BENCH_ENVIRONMENT),
            tools=tools,
        )
        session.append(RequestHeader(header=body, reason="initial"))
        fold = ContextFold()
        figures = {
            "whole log": median_ms(
                max(3, repeat // 4),
                lambda: whole_log_report(session, default_window=WINDOW, route=ROUTE).public(),
            ),
            "first report": median_ms(
                max(3, repeat // 4),
                lambda: context_report(session, default_window=WINDOW, route=ROUTE).public(),
            ),
        }
        context_report(session, default_window=WINDOW, route=ROUTE, fold=fold)
        rng = random.Random(5)
        appended = iter(range(turns + 1, turns + 1 + repeat))
        figures["after one turn"] = median_ms(
            repeat,
            lambda: context_report(session, default_window=WINDOW, route=ROUTE, fold=fold).public(),
            before=lambda: session.append_many(_turn(next(appended), rng)),
        )
        kept = context_report(session, default_window=WINDOW, route=ROUTE, fold=fold)
        if kept != whole_log_report(session, default_window=WINDOW, route=ROUTE):
            raise SystemExit("the kept report differs from the whole log's")
        return figures, len(session.events), len(session.nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,110000")
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load average: {load_average()}")
    results: dict[int, dict[str, float]] = {}
    for size in sizes:
        with tempfile.TemporaryDirectory() as root:
            results[size], events, nodes = measure_size(Path(root), size, args.repeat)
        print(f"{size:,}: {events:,} events, {nodes} surface nodes")
    first, last = sizes[0], sizes[-1]
    print(f"{'figure':16s}" + "".join(f"{f'{s:,} events':>24s}" for s in sizes) + "   growth")
    for name in results[first]:
        row = f"{name:16s}"
        for size in sizes:
            value, base = results[size][name], results[size]["whole log"]
            row += f"{value:12.3f} ms ({value / base:6.3f}x)"
        row += f"  {results[last][name] / results[first][name]:6.2f}x"
        print(row)
    print("ratios: to the same size's whole-log report; growth: last size / first size")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
