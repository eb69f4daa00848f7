"""``dsh sessions list`` / the session picker with titles, against the same listing without
them, in the same run.

``--sessions`` JSONL sessions of ``--turns`` chat turns each are stored under a temporary home.
Baseline: ``store.list()`` (headers only, what the list cost before titles). Measured:
``session_summaries(store)`` (opens every log read-only for its title, age and size). Both best
of ``--repeat``. No target: the figure says what a title costs per session, so a person knows
when the picker would want an index of titles (none is kept today).

Run: ``uv run python benchmarks/session_titles.py [--sessions 200] [--turns 20] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.helpers import append_chat_turn, new_session

from dsh.store import JsonlStore
from dsh.transcript.listing import session_summaries


def best(repeat: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = JsonlStore(Path(tmp))
        for n in range(args.sessions):
            with new_session(store) as session:
                for turn in range(args.turns):
                    append_chat_turn(session, f"question {n}.{turn} " * 8, "an answer " * 30)
        headers = best(args.repeat, store.list)
        titled = best(args.repeat, lambda: session_summaries(store))
    events = args.sessions * (1 + 6 * args.turns)
    print(f"{args.sessions} sessions x {args.turns} turns (~{events:,} events)")
    print(f"baseline store.list()          {headers:7.3f} s")
    print(f"session_summaries (titles)     {titled:7.3f} s   {titled / headers:6.1f}x")
    print(f"per session                    {1000 * titled / args.sessions:7.2f} ms")


if __name__ == "__main__":
    main()
