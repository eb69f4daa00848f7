"""The demo's throwaway project: removed when the demo ends, however it ends, unless kept; the
plain ``dsh demo`` says where a kept one is (``dsh demo --tui``: tests/tui/test_launch.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.demo import throwaway_workspace

DSH = str(Path(sys.executable).with_name("dsh"))


def test_the_copy_is_there_while_the_demo_runs_and_gone_after(tmp_path: Path) -> None:
    with throwaway_workspace(keep=False, parent=tmp_path) as workspace:
        assert sorted(p.name for p in workspace.iterdir()) == ["calc.py", "test_calc.py"]
        (workspace / "made by the model.txt").write_text("x")
    assert list(tmp_path.iterdir()) == []


def test_the_copy_is_removed_when_the_demo_ends_with_an_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit), throwaway_workspace(keep=False, parent=tmp_path):
        raise SystemExit(1)  # as the UI ends with its exit code
    with pytest.raises(KeyboardInterrupt), throwaway_workspace(keep=False, parent=tmp_path):
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_a_kept_copy_stays(tmp_path: Path) -> None:
    with throwaway_workspace(keep=True, parent=tmp_path) as workspace:
        pass
    assert list(tmp_path.iterdir()) == [workspace]
    assert (workspace / "calc.py").is_file()


@pytest.mark.parametrize("keep", [False, True])
def test_dsh_demo_removes_its_copy_unless_kept_and_then_says_where(
    tmp_path: Path, keep: bool
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(DSH_HOME=str(tmp_path / "home"), TMPDIR=str(temporary))
    done = subprocess.run(
        [DSH, "demo", *(["--keep"] if keep else [])],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    said = [line for line in done.stdout.splitlines() if line.startswith("workspace: ")]
    left = sorted(temporary.glob("dsh-demo-*"))
    if keep:
        assert said == [f"workspace: {left[0]}"] and len(left) == 1
    else:
        assert said == [] and left == []
