"""A dsh home or configuration file that is not what it must be (a file where the home
directory belongs, a directory where the config file belongs) is one ``dsh: error:`` line
naming it, exit 2, for every command: not "no sessions", nor a config silently skipped, nor
an OS message that names no cause (a repository's own config is ignored instead, said in one
line). The real console script, as a subprocess."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import DSH


def dsh(*args: str, env, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("args", [["sessions", "list"], ["trust"], ["run", "hello"]])
def test_a_home_that_is_a_file_is_named_by_every_command(tmp_path, env, args):
    home = Path(env["DSH_HOME"])
    home.write_text("not a directory")

    done = dsh(*args, env=env, cwd=tmp_path)

    assert done.returncode == 2
    assert done.stderr == f"dsh: error: DSH_HOME {home} is not a directory\n"
    assert home.read_text() == "not a directory"


def test_a_config_file_that_is_a_directory_is_refused_not_skipped(tmp_path, env):
    config = Path(env["DSH_HOME"]) / "config.toml"
    config.mkdir(parents=True)

    done = dsh("sessions", "list", env=env, cwd=tmp_path)

    assert done.returncode == 2
    assert done.stderr == f"dsh: error: {config}: cannot read (Is a directory)\n"


def test_an_untrusted_project_config_that_is_a_directory_is_said_not_skipped(tmp_path, env):
    """A repository's own config cannot stop dsh (it is not the user's): ignored, with one
    line naming it and why (tests/cli/test_untrusted_project_config_cli.py)."""
    config = tmp_path / ".dsh" / "config.toml"
    config.mkdir(parents=True)

    done = dsh("sessions", "list", env=env, cwd=tmp_path)

    assert done.returncode == 0
    assert done.stderr == (
        f"dsh: warning: {config}: ignored this untrusted project config, which does not load: "
        "cannot read (Is a directory) (dsh runs without it until it is fixed)\n"
    )
