"""``benchmarks/resume_lookups.py`` runs on a small home and prints each figure beside its
same-run baseline and their ratio, and how many headers finding the session decoded (figures
themselves are not checked: no timing assertions)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "resume_lookups.py"


def test_the_resume_lookups_benchmark_prints_each_figure_with_its_baseline():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--events", "2000", "--others", "4", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("resume lookups: a session of 2,000 events among 5 sessions;")
    for figure, baseline in (("find", "list"), ("settings", "open")):
        row = next(line for line in lines if line.startswith(f"{figure} "))
        assert f"({baseline} " in row and row.rstrip().endswith("x)")
    assert lines[-1] == "headers decoded by find: 2 (5 sessions in the store)"
