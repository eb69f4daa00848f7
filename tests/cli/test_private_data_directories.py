"""What dsh keeps (session logs, their caches, the user config) is readable by its owner alone:
``$DSH_HOME`` and every directory dsh makes in it are created ``0700`` whatever the umask, so
another user on the machine cannot read a transcript. Real runs of the ``dsh`` console script."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from dsh.config.private_dirs import make_private_directory
from tests.cli.conftest import DSH


def run_with_umask_022(args: list[str], env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(
        ["sh", "-c", 'umask 022 && exec "$@"', "sh", DSH, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def modes_under(home: Path) -> dict[str, int]:
    found = {".": home.stat().st_mode & 0o777}
    for directory, subdirectories, _ in os.walk(home):
        for name in subdirectories:
            path = Path(directory) / name
            found[str(path.relative_to(home))] = path.stat().st_mode & 0o777
    return found


def test_a_session_run_in_a_fresh_home_leaves_only_owner_only_directories(
    tmp_path: Path, env: dict[str, str]
) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "done"}]))
    run_with_umask_022(["run", "--script", str(script), "hello"], env, tmp_path)
    run_with_umask_022(["sessions", "list"], env, tmp_path)  # writes the summary cache
    modes = modes_under(Path(env["DSH_HOME"]))
    assert any(name.startswith("sessions/") for name in modes), modes
    assert {name: mode for name, mode in modes.items() if mode != 0o700} == {}


def test_an_existing_shared_home_keeps_its_mode_and_the_session_directory_is_private(
    tmp_path: Path, env: dict[str, str]
) -> None:
    home = Path(env["DSH_HOME"])
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "done"}]))
    run_with_umask_022(["run", "--script", str(script), "hello"], env, tmp_path)
    modes = modes_under(home)
    assert modes.pop(".") == 0o755
    assert modes and set(modes.values()) == {0o700}


def test_make_private_directory_refuses_a_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(FileExistsError):
        make_private_directory(tmp_path / "file")
    make_private_directory(tmp_path / "a" / "b")
    make_private_directory(tmp_path / "a" / "b")  # already there: nothing
    assert (tmp_path / "a" / "b").is_dir()
