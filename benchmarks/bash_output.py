"""What reading a command's output as a terminal would show it costs, against keeping its bytes.

``CappedOutput`` (the ``bash`` tool's reader) fed the same 64 KiB chunks with ``terminal`` off
(the baseline: decode and keep head and tail, what the tool did before) and on (escape
sequences dropped, carriage returns and backspaces applied), for three kinds of output: plain
lines, coloured lines (``ESC [ 3 1 m`` … on every line), and a progress bar (a line redrawn
with a carriage return). Each figure is the best of ``--repeat`` runs over ``--mb`` megabytes,
with the ratio to the baseline.

Run: ``uv run python benchmarks/bash_output.py [--mb 100] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import time

from dsh.tools.shell import CappedOutput

CHUNK = 65_536
KINDS = {
    "plain lines": b"collected 12 items; test_parse.py::test_empty PASSED\n",
    "coloured lines": b"\x1b[32mPASSED\x1b[0m tests/test_parse.py::test_x \x1b[1m[ 42%]\x1b[0m\n",
    "progress bar": b"\r\x1b[2K  downloading wheel  42% |#########           | 1.2/2.9 MB",
}


def seconds(sample: bytes, megabytes: int, *, terminal: bool, repeat: int) -> float:
    chunk = (sample * (CHUNK // len(sample) + 1))[:CHUNK]
    count = megabytes * 1_000_000 // CHUNK
    best = float("inf")
    for _ in range(repeat):
        out = CappedOutput(terminal=terminal)
        start = time.perf_counter()
        for _ in range(count):
            out.feed(chunk)
        out.feed(b"", final=True)
        out.text()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.mb} MB of output in {CHUNK // 1024} KiB reads, best of {args.repeat}")
    for kind, sample in KINDS.items():
        base = seconds(sample, args.mb, terminal=False, repeat=args.repeat)
        shown = seconds(sample, args.mb, terminal=True, repeat=args.repeat)
        print(
            f"{kind:>15}: bytes kept {base:.3f} s (baseline), as a terminal shows it "
            f"{shown:.3f} s, ratio {shown / base:.1f}x"
        )


if __name__ == "__main__":
    main()
