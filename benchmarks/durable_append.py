"""Durable append throughput of the JSONL and SQLite stores, with a same-run syscall floor.

A realistic session (``log_replay.py``'s builder: turns of 1-3 steps, tool calls with 0.5-4 KB
results, 20 compactions) is appended through ``Session.append`` to a JSONL store with
durability on (background group fsync at step/end, turn/end and compaction/end; the final
``sync()`` is inside the clock). The same payloads are then appended, in the same order, to a
SQLite store. The baseline is the floor of the JSONL contract measured in the same run: the same
encoded lines written with one ``os.write`` each and one final fsync (the per-event syscall that
"a process crash loses nothing appended" needs). SQLite also gets its own floor: the same rows
inserted into the store's schema with one autocommit ``INSERT`` each (what the same guarantee
costs in SQLite: one WAL transaction per event) under SQLite's defaults (``synchronous=NORMAL``,
inline checkpoint every 1,000 pages), and one final WAL fsync. Printed: the load average,
events/s of each store, the floors, and the ratios floor/store. Target: >= 20,000 events/s each;
a miss is reported, never an error exit.

Run: ``uv run python benchmarks/durable_append.py [--events N]``
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dsh.store import SqliteStore
from dsh.store.integrity import unseal
from dsh.store.sqlite import MIGRATIONS
from dsh.surface import Session
from log_replay import Builder, build, load_average, write_floor

TARGET = 20_000


def replay_into_sqlite(home: Path, source: Session) -> float:
    """Seconds to append ``source``'s payloads to a new SQLite session (final sync included)."""
    session = Session.create(SqliteStore(home), cwd=str(home))
    timer = Builder(session, random.Random(0))
    for event in source.events:
        kwargs = {}
        if getattr(event, "surface_op", None) is not None:
            kwargs = {"surface_op": event.surface_op, "source_event_seqs": event.source_event_seqs}  # type: ignore[attr-defined]
        timer.add(event.data, **kwargs)  # type: ignore[union-attr]
    start = time.perf_counter()
    session.sync()
    elapsed = timer.elapsed + time.perf_counter() - start
    assert len(session.events) == len(source.events)
    session.close()
    return elapsed


def sqlite_floor(home: Path, lines: list[bytes]) -> float:
    """Seconds to insert the canonical ``lines`` as event rows with one autocommit ``INSERT``
    each (SQLite's defaults), then fsync the WAL."""
    home.mkdir(parents=True)
    path = home / "floor.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    for _, migration in MIGRATIONS:
        migration(db)
    db.execute("INSERT INTO sessions VALUES ('floor', x'7b7d', 0)")
    rows = [("floor", seq, unseal(line.rstrip(b"\n"))[0]) for seq, line in enumerate(lines)]
    start = time.perf_counter()
    for row in rows:
        db.execute("INSERT INTO events VALUES (?, ?, ?)", row)
    fd = os.open(path.with_name(path.name + "-wal"), os.O_RDONLY)
    os.fsync(fd)
    elapsed = time.perf_counter() - start
    os.close(fd)
    db.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as tmp:
        root = Path(tmp)
        session, jsonl_s = build(root / "jsonl", args.events, 1)
        count = len(session.events)
        lines = session._log.path.read_bytes().splitlines(keepends=True)[1:]  # type: ignore[attr-defined]
        sqlite_s = replay_into_sqlite(root / "sqlite", session)
        session.close()
        floor_s = write_floor(root / "floor.jsonl", lines)
        sqlite_floor_rate = count / sqlite_floor(root / "sqlite-floor", lines)
    floor_rate = count / floor_s
    print(f"load average: {load_average()}")
    print(
        f"session: {count:,} events; baseline (one os.write per event + fsync): "
        f"{floor_rate:,.0f} events/s"
    )
    for name, seconds in (("JSONL", jsonl_s), ("SQLite", sqlite_s)):
        rate = count / seconds
        verdict = "PASS" if rate >= TARGET else "MISS"
        print(
            f"durable append, {name:6s} {rate:>10,.0f} events/s   floor/store "
            f"{floor_rate / rate:5.1f}x   target >= {TARGET:,} {verdict}"
        )
    rate = count / sqlite_s
    print(
        f"SQLite floor (one autocommit INSERT per event + WAL fsync): {sqlite_floor_rate:,.0f} "
        f"events/s   SQLite floor/store {sqlite_floor_rate / rate:.2f}x"
    )


if __name__ == "__main__":
    main()
