"""``dsh --help`` / ``dsh --version`` start-up cost against ``python -c pass`` in the same run.

Each command runs ``--repeat`` times (default 9) in a fresh interpreter; the median wall time
and the median CPU time (user + system of the child) are printed, with the same-run baseline
``python -c pass`` and the ratio. ``eager --help`` imports every command group first, the way the
CLI did before the groups loaded lazily, to show the difference in the same run.
Targets: <= 300 ms and <= 5x the baseline. A missed target is reported, never an error exit.

Run: ``uv run python benchmarks/cli_startup.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

RUN = "import sys\nfrom dsh.cli.main import main\nsys.argv = ['dsh', {flag!r}]\nmain()\n"
EAGER = (
    "import importlib\nfrom dsh.cli.main import COMMANDS\n"
    "for target, _ in COMMANDS.values():\n    importlib.import_module(target.split(':')[0])\n"
)
TARGET_MS = 300.0
RATIO_TARGET = 5.0


def timed(code: str, repeat: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds of ``python -c code``."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = os.times()
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
        walls.append((time.perf_counter() - start) * 1000)
        after = os.times()
        cpus.append(
            (
                after.children_user
                - before.children_user
                + after.children_system
                - before.children_system
            )
            * 1000
        )
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    base_wall, base_cpu = timed("pass", args.repeat)
    print(f"baseline python -c pass: {base_wall:7.1f} ms wall, {base_cpu:7.1f} ms cpu")
    rows = [
        ("import click (the floor)", "import click"),
        ("dsh --help", RUN.format(flag="--help")),
        ("dsh --version", RUN.format(flag="--version")),
        ("eager --help (all groups imported)", EAGER + RUN.format(flag="--help")),
    ]
    for name, code in rows:
        wall, cpu = timed(code, args.repeat)
        verdict = ""
        if name.startswith("dsh"):
            ok = wall <= TARGET_MS and wall / base_wall <= RATIO_TARGET
            verdict = "  target met" if ok else "  TARGET MISSED"
        print(
            f"{name:36s} {wall:7.1f} ms wall ({wall / base_wall:5.1f}x), "
            f"{cpu:7.1f} ms cpu ({cpu / max(base_cpu, 1.0):5.1f}x){verdict}"
        )


if __name__ == "__main__":
    main()
