"""``dsh trust`` names the directory it trusted or stopped trusting as ``--list`` does: a
terminal escape in the directory's name (a tarball's, a clone's) is shown escaped, never sent
to the terminal."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli.trust import trust
from tests.cli.conftest import DSH

ESCAPED_NAME = "tr\x1b]0;TITLE\x07ust"


@pytest.fixture
def odd_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    directory = (tmp_path / ESCAPED_NAME).resolve()
    (directory / ".dsh").mkdir(parents=True)
    (directory / ".dsh" / "config.toml").write_text('[tools]\napproval = "ask"\n')
    return directory


def invoke(*args: str) -> str:
    done = CliRunner().invoke(trust, list(args), catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.output


@pytest.mark.parametrize("args", [(), ("--remove",), ("--list",)])
def test_trust_remove_and_list_show_a_directory_name_escaped(odd_dir: Path, args) -> None:
    if args != ():
        invoke(str(odd_dir))  # trusted first, so there is something to remove or list
    printed = invoke(*args) if args == ("--list",) else invoke(str(odd_dir), *args)
    assert "\x1b" not in printed and "\x07" not in printed
    shown = str(odd_dir).replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert printed.startswith(shown), printed
    words = {(): "trusted as its", ("--remove",): "no longer trusted", ("--list",): "(current)"}
    assert words[args] in printed


def dsh_trust(tmp_path: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``dsh trust ARGS`` as a real process, with a private home under ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    return subprocess.run(
        [DSH, "trust", *args], env=env, cwd=cwd or tmp_path, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


def test_remove_drops_the_record_of_a_directory_deleted_since(tmp_path: Path) -> None:
    gone = (tmp_path / "gone").resolve()
    (gone / ".dsh").mkdir(parents=True)
    (gone / ".dsh" / "config.toml").write_text("[tools]\n")
    assert dsh_trust(tmp_path, cwd=gone).returncode == 0
    shutil.rmtree(gone)
    assert dsh_trust(tmp_path, "--list").stdout == f"{gone}  (directory not found)\n"
    removed = dsh_trust(tmp_path, "--remove", str(gone))
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.startswith(f"{gone}: no longer trusted (the directory is gone")
    assert dsh_trust(tmp_path, "--list").stdout == "no trusted directories\n"
    again = dsh_trust(tmp_path, "--remove", str(gone))  # no record by that path any more
    assert again.returncode == 2
    assert again.stderr == (
        f"dsh: error: {gone} does not exist, and no trusted directory is recorded by that path "
        "(dsh trust --list shows them)\n"
    )


def test_remove_of_a_directory_never_trusted_records_nothing(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    done = dsh_trust(tmp_path, "--remove", str(plain))
    assert done.returncode == 0
    assert done.stdout == f"{plain.resolve()}: was not trusted; nothing to remove\n"
    assert not (tmp_path / "home" / "config.toml").exists()


def test_trusting_a_directory_that_does_not_exist_is_still_refused(tmp_path: Path) -> None:
    done = dsh_trust(tmp_path, str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "does not exist" in done.stderr
    assert not (tmp_path / "home" / "config.toml").exists()
