"""Memory to open a long session, against the log's size on disk (issue 13), in both stores.

For each ``--events`` size, one JSONL session is built through the real API
(``log_replay.build``: tool turns with 0.5-4 KB results and compactions) and the same session
is stored in a SQLite store under the same home (its events as the seed of a new session, as
``dsh sessions migrate`` copies it). Then, each in a fresh subprocess so nothing of the build is
on the heap:

* ``open``: ``Session.open(store, id)`` read-only, JSONL; the increase of the process's peak RSS
  (``VmHWM``) over the value just before, of its RSS after the open with the session still
  held (``VmRSS``: what the open keeps), and the open's CPU time;
* ``sqlite``: the same for the SQLite copy, each figure also as a ratio to the JSONL open's of
  the same run (the baseline);
* ``bare``: the JSONL file read and decoded line by line by ``msgspec.json.decode`` into plain
  dicts and lists, held (the reference a typed load is compared with).

Each figure is printed with the file size and the ratio. Targets: the JSONL open's peak
increase <= 1.5x the file size; the SQLite open's peak <= 1.5x the JSONL open's. A miss is
reported, never an error exit.

Run: ``uv run python benchmarks/open_memory.py [--events 10000 100000] [--seed 1] [--json]``
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from dsh.store import JsonlStore, SqliteStore
from dsh.surface import Session
from log_replay import build  # type: ignore[import-not-found]

TARGET = 1.5
SQLITE_TARGET = 1.5
MIB = 1024 * 1024


def status(field: str) -> int:
    """A ``/proc/self/status`` figure in bytes (``VmHWM`` peak RSS, ``VmRSS`` current)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"no {field} in /proc/self/status (Linux only)")


def child(mode: str, home: str, session_id: str) -> None:
    """Subprocess mode: print the peak and held RSS increase and the CPU time of one open (or
    bare decode)."""
    gc.collect()
    peak_before, rss_before = status("VmHWM"), status("VmRSS")
    start = time.process_time()
    if mode == "open":
        held: object = Session.open(JsonlStore(Path(home)), session_id)
    elif mode == "sqlite":
        held = Session.open(SqliteStore(Path(home)), session_id)
    else:
        path = JsonlStore(Path(home)).log_path(session_id)
        decode = msgspec.json.Decoder().decode
        with path.open("rb") as handle:
            held = [decode(line) for line in handle]
    cpu = time.process_time() - start
    gc.collect()
    peak, rss = status("VmHWM") - peak_before, status("VmRSS") - rss_before
    print(json.dumps({"peak": peak, "held": rss, "cpu": cpu}))
    del held


def measure(mode: str, home: Path, session_id: str) -> dict[str, float]:
    argv = [sys.executable, __file__, "--child", mode, str(home), session_id]
    result = subprocess.run(argv, check=True, capture_output=True, text=True)
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def run(events: int, seed: int) -> dict[str, object]:
    """Build a session of about ``events`` events in both stores and measure each open."""
    with tempfile.TemporaryDirectory(prefix="dsh-mem-") as tmp:
        home = Path(tmp)
        session, _ = build(home, events, seed)
        count, session_id = len(session.events), session.id
        header = session.header
        copy = SqliteStore(home).create(
            cwd=header.cwd,
            seed=list(session.events),
            session_id=session_id,
            created_at=header.created_at,
        )
        copy.close()
        session.close()
        size = JsonlStore(home).log_path(session_id).stat().st_size
        database = SqliteStore(home).path.stat().st_size
        opened = measure("open", home, session_id)
        sqlite = measure("sqlite", home, session_id)
        bare = measure("bare", home, session_id)
    print(
        f"session: {count:,} events, log {size / MIB:.1f} MiB on disk "
        f"(SQLite database {database / MIB:.1f} MiB)"
    )
    rows = [
        ("open: peak RSS increase", opened["peak"], TARGET),
        ("open: RSS held after the open", opened["held"], None),
        ("bare msgspec decode to dicts: peak", bare["peak"], None),
        ("bare msgspec decode to dicts: held", bare["held"], None),
    ]
    for name, value, target in rows:
        ratio = value / size
        verdict = ""
        if target is not None:
            verdict = f"   target <= {target}x {'PASS' if ratio <= target else 'MISS'}"
        print(f"{name:<38} {value / MIB:8.1f} MiB  {ratio:5.2f}x the file{verdict}")
    print(f"{'open: CPU':<38} {opened['cpu']:8.3f} s")
    compared = [
        ("SQLite open: peak RSS increase", "peak", SQLITE_TARGET),
        ("SQLite open: RSS held after the open", "held", None),
    ]
    for name, key, target in compared:
        ratio = sqlite[key] / max(opened[key], 1)
        verdict = ""
        if target is not None:
            verdict = f"   target <= {target}x {'PASS' if ratio <= target else 'MISS'}"
        print(
            f"{name:<38} {sqlite[key] / MIB:8.1f} MiB  {ratio:5.2f}x the JSONL open's "
            f"({opened[key] / MIB:.1f} MiB){verdict}"
        )
    ratio = sqlite["cpu"] / max(opened["cpu"], 1e-9)
    print(
        f"{'SQLite open: CPU':<38} {sqlite['cpu']:8.3f} s    {ratio:5.2f}x the JSONL open's "
        f"({opened['cpu']:.3f} s)"
    )
    return {
        "events": count,
        "file_bytes": size,
        "database_bytes": database,
        "open": opened,
        "sqlite": sqlite,
        "bare": bare,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "HOME", "ID"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)
    results = []
    for index, events in enumerate(args.events):
        if index:
            print()
        results.append(run(events, args.seed))
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
