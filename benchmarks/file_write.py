"""What writing a file whole or not at all costs ``write_file``, against the old in-place write.

``write_file`` (``dsh.tools.files``, the whole call but the thread hop: resolve, read the old
text, write, diff, undo record) overwrites a 1 KB and a 1 MB text file, alternating two
contents, in two ways measured in the same run and the same directory:

- *in place* (the baseline, the old method written out here): open the file, truncate it, write
  the bytes, no fsync — a crash between the truncate and the end of the write leaves it cut
  short or empty;
- *atomic* (``dsh.tools.atomic_write``, what ships): a temporary file beside it, fsynced, renamed
  over it, the directory fsynced.

Also printed, to say where the time goes: the atomic write with ``os.fsync`` made a no-op (the
rename alone), and the atomic write of the 1 KB file in a directory of 10,000 other files (each
write looks there for its leftovers). Each figure is the median of the runs, in milliseconds;
the ratio is atomic / in place. fsync's cost depends on the disk and the file system: the
figures are this machine's.

Run: ``uv run python benchmarks/file_write.py [--runs N] [--dir DIR]`` (``--dir``: a directory
on the file system to measure, default the system's temporary directory)
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import dsh.tools.files as files
from dsh.errors import ToolError
from log_replay import load_average

SIZES = {"1 KB": 1024, "1 MB": 1024 * 1024}
_IN_PLACE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


def write_in_place(path: Path, data: bytes, shown: str) -> int:
    """The old ``write_regular_file``: truncate and write the file itself, no fsync."""
    try:
        fd = os.open(path, _IN_PLACE_FLAGS, 0o666)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.ELOOP, errno.EOPNOTSUPP):
            raise ToolError(f"{shown} is not a regular file", code="NOT_A_FILE") from exc
        raise
    with os.fdopen(fd, "wb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolError(f"{shown} is not a regular file", code="NOT_A_FILE")
        os.set_blocking(fd, True)
        fh.truncate(0)
        fh.write(data)
    return 0


@contextmanager
def replaced(owner: object, name: str, value: object) -> Iterator[None]:
    real = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, real)


def median_ms(runs: int, workspace: Path, name: str, size: int) -> float:
    """The median time of ``runs`` ``write_file`` calls overwriting ``name`` with ``size``
    bytes of text (two contents, alternating, so every call changes the file)."""
    line = "x" * 63 + "\n"
    contents = [(line * (size // 64)).replace("x", letter, 1) for letter in "ab"]
    files._write(name, contents[1], workspace)
    times: list[float] = []
    for run in range(runs):
        start = time.perf_counter()
        files._write(name, contents[run % 2], workspace)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(runs: int, workspace: Path, name: str, size: int, way: str) -> float:
    """``median_ms`` with the write done ``way``: in place, atomic, or atomic without fsync."""
    if way == "in place":
        with replaced(files, "write_regular_file", write_in_place):
            return median_ms(runs, workspace, name, size)
    if way == "atomic, no fsync":
        with replaced(os, "fsync", lambda fd: None):
            return median_ms(runs, workspace, name, size)
    return median_ms(runs, workspace, name, size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    print(f"load average: {load_average()}; median of {args.runs} runs each, in ms")
    with tempfile.TemporaryDirectory(prefix="dsh-bench-", dir=args.dir) as tmp:
        workspace = Path(tmp).resolve()
        crowded = workspace / "crowded"
        crowded.mkdir()
        for index in range(10_000):
            (crowded / f"file{index:05d}.txt").touch()
        print(f"{'write_file':12s} {'in place':>9s} {'atomic':>9s} {'ratio':>7s}   rename alone")
        for label, size in SIZES.items():
            name = f"f{size}.txt"
            old = measure(args.runs, workspace, name, size, "in place")
            new = measure(args.runs, workspace, name, size, "atomic")
            bare = measure(args.runs, workspace, name, size, "atomic, no fsync")
            print(f"{label:12s} {old:9.3f} {new:9.3f} {new / old:6.1f}x   {bare:9.3f}")
        old = measure(args.runs, workspace, "crowded/f.txt", 1024, "in place")
        new = measure(args.runs, workspace, "crowded/f.txt", 1024, "atomic")
        print(
            f"{'1 KB, 10k':12s} {old:9.3f} {new:9.3f} {new / old:6.1f}x   "
            "(a directory of 10,000 files)"
        )


if __name__ == "__main__":
    main()
