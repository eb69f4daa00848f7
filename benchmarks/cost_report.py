"""``/cost`` (the TUI's bills) and the web's session-info figures kept current by a
``ContextFold``, against the scans of the whole log they replaced, in the same run.

For each size a JSONL session of about that many events is prefilled as in ``scaling.py``
(chat-and-tool turns with provider usage; every 400 events the older surface is replaced by one
checkpoint) and opened for writing. Timed, each the median of ``--repeat`` runs:

- ``/cost whole log`` (the baseline): the bills from a scan of every event, as every ``/cost``
  computed them before (``tests/agent/context_reference.py``'s ``whole_log_cost_report``, the
  code before the fold, which the fold's tests hold it equal to);
- ``/cost first report``: ``session_cost_report`` with a new fold, a face's first ask (the
  per-type index, not the log);
- ``/cost after one turn``: one more turn appended (7 events, untimed), then
  ``session_cost_report`` with the fold the earlier asks kept (the TUI controller's);
- ``info whole log`` (the baseline): ``session_stats`` over every event, what the web's session
  info of a stored session counted before (and what an open one's kept sums started from);
- ``info after one turn``: one more turn appended, then the session info's figures from the
  kept fold (``update(session, items=False).stats``: the web handle's).

Printed: the load average before and after, each figure in ms per size with its ratio to that
size's whole-log baseline (``/cost`` rows to ``/cost whole log``, ``info`` rows to ``info whole
log``), and each figure's growth from the first size to the last. Reported, never an error exit
on timings (a kept figure that differs from the whole log's is an error exit).

Run: ``uv run python benchmarks/cost_report.py [--sizes 10000,100000] [--repeat 21]``
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.agent.context_reference import whole_log_cost_report

from context_report import load_average, median_ms
from dsh.agent.context_fold import ContextFold
from dsh.agent.context_report import session_cost_report
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.transcript.stats import session_stats
from scaling import _turn, prefill

BASELINE = {"/cost": "/cost whole log", "info": "info whole log"}


def measure_size(root: Path, events: int, repeat: int) -> tuple[dict[str, float], int, int]:
    """The figures on a session of about ``events`` events; with its events and nodes."""
    (root / "ws").mkdir()
    store = JsonlStore(root / "home")
    session_id, turns = prefill(store, root / "ws", events)
    few = max(3, repeat // 4)
    with Session.open(store, session_id, writable=True) as session:
        figures = {
            "/cost whole log": median_ms(few, lambda: whole_log_cost_report(session.events)),
            "/cost first report": median_ms(few, lambda: session_cost_report(session)),
        }
        rng = random.Random(5)
        appended = iter(range(turns + 1, turns + 1 + 2 * repeat))

        def one_turn() -> None:
            session.append_many(_turn(next(appended), rng))

        fold = ContextFold()
        session_cost_report(session, fold=fold)
        figures["/cost after one turn"] = median_ms(
            repeat, lambda: session_cost_report(session, fold=fold), before=one_turn
        )
        figures["info whole log"] = median_ms(few, lambda: session_stats(session.events))
        figures["info after one turn"] = median_ms(
            repeat, lambda: fold.update(session, items=False).stats, before=one_turn
        )
        if session_cost_report(session, fold=fold) != whole_log_cost_report(session.events):
            raise SystemExit("the kept bills differ from the whole log's")
        if fold.stats != session_stats(session.events):
            raise SystemExit("the kept figures differ from the whole log's")
        return figures, len(session.events), len(session.nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
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
    print(f"{'figure':22s}" + "".join(f"{f'{s:,} events':>24s}" for s in sizes) + "   growth")
    for name in results[first]:
        row = f"{name:22s}"
        for size in sizes:
            value, base = results[size][name], results[size][BASELINE[name.split()[0]]]
            row += f"{value:12.3f} ms ({value / base:6.3f}x)"
        row += f"  {results[last][name] / results[first][name]:6.2f}x"
        print(row)
    print("ratios: to the same size's whole-log scan; growth: last size / first size")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
