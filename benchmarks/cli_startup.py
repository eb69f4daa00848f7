"""``dsh --help`` / ``dsh --version`` start-up cost against ``python -c pass`` in the same run.

Every row runs ``--repeat`` times (default 9) in a fresh interpreter. The rows take turns (one
run of each, then the next round), so load on a shared machine falls on the baseline and on dsh
alike. Printed per row: the median wall time and the median CPU time of the child (user + system,
from ``getrusage``), each with its ratio to the same-run baseline ``python -c pass``; the load
average before and after.

Two regimes, each with its own baseline:

- ``as configured``: this environment with ``PYTHONDONTWRITEBYTECODE=1``: when the packages were
  installed without bytecode (uv's default; the project no longer asks uv to compile at sync,
  which made every ``uv run`` recompile the whole environment, ~0.2 s and a line on stderr),
  every run compiles click (and dsh) from source — the worst case, for a user who sets that
  variable.
- ``bytecode cached``: compiled modules kept in a temporary ``PYTHONPYCACHEPREFIX`` (warmed by one
  run first), which is what a writable environment sees from its second run on (Python writes
  the bytecode on first import; pip compiles at install).

``  --help without the early guard`` is ``dsh --help`` run through ``dsh.cli.main`` directly,
as the console script did before it made its process non-dumpable first (``dsh.cli.entry``):
``dsh --help`` over it is what that costs.

``import click`` is the floor: dsh parses its command line with click, which ``--help`` and
``--version`` cannot skip. ``eager --help`` imports every command group first, the way the CLI did
before the groups loaded lazily, to show the difference in the same run.
Targets: <= 300 ms and <= 5x the baseline. A missed target is reported, never an error exit.

Run: ``uv run python benchmarks/cli_startup.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

RUN = "import sys\nfrom dsh.cli.entry import main\nsys.argv = ['dsh', {flag!r}]\nmain()\n"
"""What the ``dsh`` console script runs: ``dsh.cli.entry`` makes the process non-dumpable first."""
UNGUARDED = RUN.replace("dsh.cli.entry", "dsh.cli.main")
"""The same without that first step (the entry point before it): the guard's cost is the
difference."""
EAGER = (
    "import importlib\nfrom dsh.cli.main import COMMANDS\n"
    "for target, _ in COMMANDS.values():\n    importlib.import_module(target.split(':')[0])\n"
)
ROWS = [
    ("python -c pass (baseline)", "pass"),
    ("import click (the floor)", "import click"),
    ("dsh --help", RUN.format(flag="--help")),
    ("dsh --version", RUN.format(flag="--version")),
    ("  --help without the early guard", UNGUARDED.format(flag="--help")),
    ("eager --help (all groups imported)", EAGER + RUN.format(flag="--help")),
]
TARGET_MS = 300.0
RATIO_TARGET = 5.0


def children_cpu_seconds() -> float:
    """User + system CPU seconds of every finished child so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(code: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one ``python -c code``."""
    cpu_before = children_cpu_seconds()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL, env=env)
    wall = (time.perf_counter() - start) * 1000
    return wall, (children_cpu_seconds() - cpu_before) * 1000


def measure(env: dict[str, str], repeat: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU milliseconds per row, the rows taking turns ``repeat`` times."""
    for _, code in ROWS:  # one untimed run each: fills the bytecode cache, warms the page cache
        run_once(code, env)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in ROWS}
    for _ in range(repeat):
        for name, code in ROWS:
            samples[name].append(run_once(code, env))
    return {
        name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        for name, runs in samples.items()
    }


def report(title: str, figures: dict[str, tuple[float, float]]) -> None:
    """Print one regime's rows with their ratios to its baseline and the target verdicts."""
    base_wall, base_cpu = figures[ROWS[0][0]]
    print(f"{title}:")
    for name, (wall, cpu) in figures.items():
        verdict = ""
        if name.startswith("dsh"):
            ok = wall <= TARGET_MS and wall / base_wall <= RATIO_TARGET
            verdict = "  target met" if ok else "  TARGET MISSED"
        print(
            f"  {name:36s} {wall:7.1f} ms wall ({wall / base_wall:5.1f}x), "
            f"{cpu:7.1f} ms cpu ({cpu / base_cpu:5.1f}x){verdict}"
        )


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages and the CPU count, for the record."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    print(f"before: {load_average()}")
    as_configured = dict(os.environ)
    writes = "off" if as_configured.get("PYTHONDONTWRITEBYTECODE") else "on"
    report(f"as configured (bytecode writing {writes})", measure(as_configured, args.repeat))
    with tempfile.TemporaryDirectory(prefix="dsh-pyc-") as cache:
        cached = {k: v for k, v in as_configured.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = cache
        report("bytecode cached", measure(cached, args.repeat))
    print(f"after:  {load_average()}")


if __name__ == "__main__":
    main()
