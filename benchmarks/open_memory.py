"""Memory to open a long session, against the log's size on disk (issue 13).

One JSONL session of ``--events`` events is built through the real API (``log_replay.build``:
tool turns with 0.5-4 KB results and compactions). Then, each in a fresh subprocess so nothing
of the build is on the heap:

* ``open``: ``Session.open(store, id)`` read-only; the increase of the process's peak RSS
  (``VmHWM``) over the value just before, and of its RSS after the open with the session still
  held (``VmRSS``: what the open keeps);
* ``bare``: the same file read and decoded line by line by ``msgspec.json.decode`` into plain
  dicts and lists, held (the reference a typed load is compared with).

Each figure is printed with the file size and the ratio. Target: the open's peak increase
<= 1.5x the file size. A miss is reported, never an error exit.

Run: ``uv run python benchmarks/open_memory.py [--events 100000] [--seed 1] [--json]``
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import msgspec

from dsh.store import JsonlStore
from dsh.surface import Session
from log_replay import build  # type: ignore[import-not-found]

TARGET = 1.5


def status(field: str) -> int:
    """A ``/proc/self/status`` figure in bytes (``VmHWM`` peak RSS, ``VmRSS`` current)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"no {field} in /proc/self/status (Linux only)")


def child(mode: str, home: str, session_id: str) -> None:
    """Subprocess mode: print the peak and held RSS increase of one open (or bare decode)."""
    gc.collect()
    peak_before, rss_before = status("VmHWM"), status("VmRSS")
    if mode == "open":
        held: object = Session.open(JsonlStore(Path(home)), session_id)
    else:
        path = JsonlStore(Path(home)).log_path(session_id)
        decode = msgspec.json.Decoder().decode
        with path.open("rb") as handle:
            held = [decode(line) for line in handle]
    gc.collect()
    print(json.dumps({"peak": status("VmHWM") - peak_before, "held": status("VmRSS") - rss_before}))
    del held


def measure(mode: str, home: Path, session_id: str) -> dict[str, int]:
    argv = [sys.executable, __file__, "--child", mode, str(home), session_id]
    result = subprocess.run(argv, check=True, capture_output=True, text=True)
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "HOME", "ID"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)
    with tempfile.TemporaryDirectory(prefix="dsh-mem-") as tmp:
        home = Path(tmp)
        session, _ = build(home, args.events, args.seed)
        count, session_id = len(session.events), session.id
        session.close()
        size = JsonlStore(home).log_path(session_id).stat().st_size
        opened = measure("open", home, session_id)
        bare = measure("bare", home, session_id)
    mib = 1024 * 1024
    print(f"session: {count:,} events, log {size / mib:.1f} MiB on disk")
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
        print(f"{name:<38} {value / mib:8.1f} MiB  {ratio:5.2f}x the file{verdict}")
    if args.json:
        print(json.dumps({"events": count, "file_bytes": size, "open": opened, "bare": bare}))


if __name__ == "__main__":
    main()
