"""``benchmarks/session_scale.py`` runs on small sessions and prints each figure beside its
same-run baseline, their ratio and its growth with the log (figures themselves are not
checked: no timing assertions)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "session_scale.py"
FIGURES = {
    "open": "decode",
    "settings read": "open",
    "list_checkpoints": "scan",
    "history_search": "walk",
    "history_read": "walk",
    "step": "walk",
}


def test_the_scale_benchmark_prints_every_figure_with_its_baseline_and_growth():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "3000,6000", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("CPU ms, best of 1; load average ")
    for figure, baseline in FIGURES.items():
        row = next(line for line in lines if line.startswith(f"{figure} "))
        assert row.count(f"({baseline} ") == 2 and "  3,000: " in row and "  6,000: " in row
        assert row.rstrip().endswith("x") and "2x log: " in row
