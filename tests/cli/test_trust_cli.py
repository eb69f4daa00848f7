"""``dsh trust`` names the directory it trusted or stopped trusting as ``--list`` does: a
terminal escape in the directory's name (a tarball's, a clone's) is shown escaped, never sent
to the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh.cli.trust import trust

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
