"""Marking superseded values in a pass's texts: ``mark_replaced`` (a substring check before the
regex) against the same marking with a regex per literal and line (how it was written before),
in the same run.

A long session collects hundreds of superseded ``key=value`` literals; every line of every stub
and of the state is checked against each of them. Python's regex cache holds 512 patterns, so
with more literals than that every search compiled its pattern again: in the offline bench's
``wide-window`` scenario (128k window, 240 turns) that was 92 of the recallable run's 121 s.

Inputs: ``--lines`` lines of state text, a fifth of them naming one of ``--literals``
superseded literals. Each of ``--rounds`` rounds times the baseline, then ``mark_replaced``;
the median times and ratio are printed with the load average. Both must give the same text (an
error exit if not: that is a bug, not a timing).

Run: ``uv run python benchmarks/mark_replaced.py [--lines 400] [--literals 600] [--rounds 5]``
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time

from dsh.compaction.recallable.texts import mark_replaced


def baseline(text: str, replaced: dict[str, str]) -> str:
    """The marking as it was: a fresh ``re.search`` per literal and line (no keyword lines
    here, so only the ``(old → new)`` suffix applies)."""
    lines = []
    for line in text.splitlines():
        olds = [old for old in replaced if re.search(re.escape(old) + r"(?![\w.])", line)]
        lines.append(line + "".join(f" ({old} → {replaced[old]})" for old in olds))
    return "\n".join(lines)


def inputs(lines: int, literals: int) -> tuple[str, dict[str, str]]:
    replaced = {f"key_{i}={i * 7}": f"key_{i}={i * 7 + 1}" for i in range(literals)}
    olds = list(replaced)
    text = "\n".join(
        f"- step {n}: set {olds[(n * 31) % literals]} in conf/app.toml"
        if n % 5 == 0
        else f"- step {n}: read src/module_{n}.py and ran the tests"
        for n in range(lines)
    )
    return text, replaced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=400)
    parser.add_argument("--literals", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    text, replaced = inputs(args.lines, args.literals)
    if mark_replaced(text, replaced) != baseline(text, replaced):
        raise SystemExit("mark_replaced and the baseline disagree")
    old_times, new_times = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        baseline(text, replaced)
        old_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        mark_replaced(text, replaced)
        new_times.append(time.perf_counter() - start)
    old, new = statistics.median(old_times), statistics.median(new_times)
    print(f"load average {os.getloadavg()[0]:.2f}; {args.lines} lines, {args.literals} literals")
    print(f"baseline (a fresh regex per literal and line): {old * 1000:9.1f} ms")
    print(f"mark_replaced:                                 {new * 1000:9.1f} ms")
    print(f"ratio mark_replaced / baseline: {new / old:.4f}")


if __name__ == "__main__":
    main()
