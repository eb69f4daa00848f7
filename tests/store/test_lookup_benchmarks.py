"""``benchmarks/session_lookup.py`` and ``benchmarks/settings_read.py`` run on small stores and
print each figure beside its same-run baseline, their ratio and its growth (figures themselves
are not checked: no timing assertions)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _rows(script: str, *args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args, "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout.splitlines()


def test_the_session_lookup_benchmark_prints_each_figure_with_its_baseline_and_growth():
    lines = _rows("session_lookup.py", "--sizes", "2,4")
    assert lines[0].startswith("CPU ms, best of 1; load average ")
    for store in ("jsonl", "sqlite"):
        for figure in ("elsewhere", "import taken"):
            row = next(line for line in lines if line.startswith(f"{store} {figure} "))
            assert row.count("(header ") == 2 and " 2: " in row and " 4: " in row
            assert "2x sessions: " in row and row.rstrip().endswith("x")


def test_the_settings_read_benchmark_prints_each_figure_with_its_baseline_and_growth():
    lines = _rows("settings_read.py", "--sizes", "300,600")
    assert lines[0].startswith("CPU ms, best of 1; load average ")
    for store in ("jsonl", "sqlite"):
        for figure in ("far", "far, cold", "near"):
            row = next(line for line in lines if line.startswith(f"{store} {figure}  "))
            assert row.count("(header ") == 2 and " 300: " in row and " 600: " in row
            assert "x log: " in row and row.rstrip().endswith("x")
