"""The append benchmarks run on a small session and print each figure beside its same-run
baseline and the ratio (figures themselves are not checked: no timing assertions)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout


def test_durable_append_prints_both_stores_against_their_floors():
    out = _run("durable_append.py", "--events", "400")
    assert out.startswith("load average: ")
    assert "baseline (one os.write per event + fsync):" in out
    for store in ("JSONL", "SQLite"):
        assert f"durable append, {store}" in out
    assert out.count("floor/store") == 3  # JSONL, SQLite, and SQLite against its own floor
    assert "SQLite floor (one autocommit INSERT per event + WAL fsync):" in out


def test_log_replay_prints_append_against_its_floor():
    out = _run("log_replay.py", "--events", "400")
    assert "load average: " in out
    lines = out.splitlines()
    append = next(i for i, line in enumerate(lines) if line.startswith("append (durable"))
    assert lines[append + 1].startswith("baseline: os.write per line + fsync")
    assert lines[append + 2].startswith("baseline / append")
