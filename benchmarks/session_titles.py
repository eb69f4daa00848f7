"""``dsh sessions list`` / the session picker with titles, against the same listing without
them, in the same run: what the summary cache makes a listing cost.

``--sessions`` sessions of ``--turns`` chat turns each (about ``1 + 6 x turns`` events) are
stored under a temporary home (``--backend jsonl`` or ``sqlite``). Timed, each best of
``--repeat``:

- ``store.list()``: the headers alone (the floor: what any listing costs);
- whole logs: every log loaded and summarised, as listings did before the cache;
- first listing: ``session_summaries(store)`` with no cache file (it reads every log once and
  writes the cache);
- repeat listing, recent logs: the same with the cache in place and nothing appended, every log
  written in the last two seconds (JSONL: each file opened and its last line compared; SQLite:
  one indexed row per session);
- repeat listing, settled logs: the same once the logs' mtimes are an hour old (JSONL: a stat
  per session; the usual case, since most sessions were written long before the listing);
- after appends: a repeat listing after ``--appended`` sessions got one more turn each (it reads
  just those turns);
- the picker's rows, without and with busy marks: the listing after the appends, then the same
  with, for each row, whether another process holds the session (``session_holder``: what
  ``dsh --resume``'s picker and ``/sessions`` mark busy), ``--held`` sessions held by child
  processes meanwhile (a ``stat`` of each lock file; for the held ones a read and a look at the
  flock), and the lock looks alone. The difference is what the busy marks cost.

Ratios are to ``store.list()`` and to the whole-log listing. The cache keeps a listing's cost at
the sessions' number plus what was appended, so the repeat ratio stays flat as sessions grow
longer (try ``--turns 200``), while the whole-log one grows with them.

Run: ``uv run python benchmarks/session_titles.py [--sessions 200] [--turns 20] [--repeat 5]
[--backend jsonl] [--appended 5] [--held 3]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.helpers import append_chat_turn, new_session, writer_in_child_process

from dsh.store import EventStore, JsonlStore, SqliteStore
from dsh.store.derived import summary_cache_path
from dsh.store.locking import session_holder
from dsh.surface import Session
from dsh.transcript.listing import read_whole, session_summaries


def best(repeat: int, work: Callable[[], object], before: Callable[[], object] = list) -> float:
    """The shortest of ``repeat`` timed runs of ``work`` (``before`` runs untimed first)."""
    times = []
    for _ in range(repeat):
        before()
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved(repeat: int, *works: Callable[[], object]) -> list[float]:
    """The shortest of ``repeat`` timed runs of each of ``works``, taken in turn (a load that
    comes and goes weighs on each alike)."""
    times: list[list[float]] = [[] for _ in works]
    for _ in range(repeat):
        for work, taken in zip(works, times, strict=True):
            start = time.perf_counter()
            work()
            taken.append(time.perf_counter() - start)
    return [min(taken) for taken in times]


def fill(store: EventStore, sessions: int, turns: int) -> list[Session]:
    """``sessions`` closed sessions of ``turns`` chat turns; reopened for appending later."""
    made = []
    for n in range(sessions):
        with new_session(store) as session:
            for turn in range(turns):
                append_chat_turn(session, f"question {n}.{turn} " * 8, "an answer " * 30)
        made.append(session)
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backend", choices=("jsonl", "sqlite"), default="jsonl")
    parser.add_argument("--appended", type=int, default=5, help="sessions appended to")
    parser.add_argument("--held", type=int, default=3, help="sessions another process holds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        store: EventStore = JsonlStore(home) if args.backend == "jsonl" else SqliteStore(home)
        ids = [s.id for s in fill(store, args.sessions, args.turns)]
        cache = summary_cache_path(home, args.backend)

        def drop_cache() -> None:
            cache.unlink(missing_ok=True)

        def append_some() -> None:
            for session_id in ids[: args.appended]:
                with Session(store.open(session_id, writable=True)) as session:
                    append_chat_turn(session, "one more question", "one more answer")

        headers = best(args.repeat, store.list)
        whole = best(args.repeat, lambda: [read_whole(store, h) for h in store.list()])
        first = best(args.repeat, lambda: session_summaries(store), before=drop_cache)
        recent = best(args.repeat, lambda: session_summaries(store))
        if isinstance(store, JsonlStore):
            hour_ago = time.time_ns() - 3600 * 10**9
            for session_id in ids:
                os.utime(store.log_path(session_id), ns=(hour_ago, hour_ago))
        session_summaries(store)  # the cache takes in the settled mtimes
        settled = best(args.repeat, lambda: session_summaries(store))
        appended = best(args.repeat, lambda: session_summaries(store), before=append_some)
        session_summaries(store)  # the appends taken in: the rows' listing is a settled one

        def rows() -> list[bool]:
            return [session_holder(store, s.id) is not None for s in session_summaries(store)]

        with contextlib.ExitStack() as holders:
            for session_id in ids[-args.held :] if args.held else []:
                holders.enter_context(writer_in_child_process(home, args.backend, session_id))
            assert sum(rows()) == args.held
            unmarked, marked, looks = interleaved(
                args.repeat,
                lambda: session_summaries(store),
                rows,
                lambda: [session_holder(store, i) for i in ids],
            )
        cache_bytes = cache.stat().st_size
    events = args.sessions * (1 + 6 * args.turns)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{args.sessions} sessions x {args.turns} turns (~{events:,} events), "
        f"{args.backend} store, best of {args.repeat}; load average {load}"
    )
    print(f"{'':36} {'seconds':>8} {'x list()':>9} {'x whole':>8} {'ms/session':>11}")
    rows = [
        ("store.list() (headers only)", headers),
        ("whole logs (before the cache)", whole),
        ("first listing (no cache file)", first),
        ("repeat listing, recent logs", recent),
        ("repeat listing, settled logs", settled),
        (f"after {args.appended} sessions got a turn", appended),
        ("picker rows, no busy marks (before)", unmarked),
        (f"picker rows, busy marked ({args.held} held)", marked),
        ("  the lock looks alone", looks),
    ]
    for name, seconds in rows:
        print(
            f"{name:36} {seconds:8.4f} {seconds / headers:8.2f}x {seconds / whole:7.2f}x "
            f"{1000 * seconds / args.sessions:11.3f}"
        )
    print(
        f"first / repeat: {first / recent:.1f}x (recent logs), {first / settled:.1f}x (settled); "
        f"cache file {cache_bytes:,} bytes"
    )
    print(
        f"busy marks: {1e6 * (marked - unmarked) / args.sessions:+.1f} us/session on the picker's "
        f"rows ({marked / unmarked:.2f}x); the looks alone {1e6 * looks / args.sessions:.1f} "
        "us/session"
    )


if __name__ == "__main__":
    main()
