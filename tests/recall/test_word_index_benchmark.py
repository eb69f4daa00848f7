"""``benchmarks/word_index.py`` runs on small sessions and prints each figure beside its
same-run baseline, their ratio and its growth (figures themselves are not checked: no timing
assertions)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "word_index.py"


def test_the_word_index_benchmark_prints_each_figure_with_its_baseline_and_growth():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "600,1200", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("CPU ms (append: us per event), best of 1; load average ")
    for figure, baseline in (
        ("first ", "later"),
        ("new process ", "later"),
        ("one span ", "later"),
        ("append, indexing ", "append"),
    ):
        row = next(line for line in lines if line.startswith(figure))
        assert row.count(f"({baseline} ") == 2 and " 600: " in row and " 1,200: " in row
        assert "2x log: " in row and row.rstrip().endswith("x")
