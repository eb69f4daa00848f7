"""Click's own usage errors print as one ``dsh: error: …`` line like every other error,
exit 2 (the real entry point, as a subprocess)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DSH = str(Path(sys.executable).with_name("dsh"))


def dsh(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DSH, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["run", "--bogus"], "dsh: error: No such option '--bogus' (see `dsh run --help`)"),
        (["nosuch"], "dsh: error: No such command 'nosuch' (see `dsh --help`)"),
        (
            ["run", "--max-steps", "x", "hi"],
            "dsh: error: Invalid value for '--max-steps': 'x' is not a valid integer range "
            "(see `dsh run --help`)",
        ),
    ],
)
def test_a_click_usage_error_is_one_line_and_exits_2(tmp_path: Path, args: list[str], line: str):
    done = dsh(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == line + "\n" and done.stdout == ""


def test_help_and_version_still_exit_0(tmp_path: Path):
    assert dsh("--version", cwd=tmp_path).returncode == 0
    helped = dsh("run", "--help", cwd=tmp_path)
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: dsh run")
