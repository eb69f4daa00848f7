"""The approval flags (``--yes``, ``--allow KINDS``) are one definition (``dsh.cli.options``)
that the three faces share: ``dsh`` (the terminal UI), ``dsh run`` and ``dsh web`` take them
with the same help and checks, refuse a kind they do not know in the same line before anything
starts, and hand them on as one ``ApprovalFlags``.

What they do in each face: ``tests/cli/test_run_cli.py`` (a real ``dsh run``),
``tests/tui/test_approval_tui.py`` (the app), ``tests/web/test_web_approval_flags.py`` (the
server's agents)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import dsh.cli.run
import dsh.cli.tui
import dsh.cli.web
from dsh.cli.main import cli
from dsh.cli.options import ApprovalFlags
from tests.cli.test_route_flags import APPROVAL_FLAGS, FACE_ARGS, OWN_FLAGS, face, options_of


def test_the_three_faces_define_each_approval_flag_alike() -> None:
    faces = {name: options_of(face(name)) for name in OWN_FLAGS}
    for flag in sorted(APPROVAL_FLAGS):
        defined = {
            name: (options[flag].to_info_dict(), options[flag].callback)
            for name, options in faces.items()
        }
        assert defined["run"] == defined["dsh"] == defined["web"], flag


@pytest.fixture
def handed_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, ApprovalFlags]:
    """What each face would start with: the UI's launch, the web's server and ``dsh run``'s
    policy are stand-ins that keep the approval flags they were given."""
    monkeypatch.setenv("DSH_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.json").write_text('[{"text": "hi"}]')
    got: dict[str, ApprovalFlags] = {}

    def launch(*_: Any, approval_flags: ApprovalFlags, **__: Any) -> None:
        got["dsh"] = approval_flags

    def serve(*args: Any) -> None:
        got["web"] = next(a for a in args if isinstance(a, ApprovalFlags))

    def policy(_settings: Any, *, yes: bool, allow: Any) -> Any:
        got["run"] = ApprovalFlags(yes=yes, allow=allow)
        raise SystemExit(0)  # enough: the turn is not the point

    monkeypatch.setattr(dsh.cli.tui, "launch", launch)
    monkeypatch.setattr(dsh.cli.web, "_serve", serve)
    monkeypatch.setattr(dsh.cli.run, "approval_policy", policy)
    return got


def invoke(name: str, *flags: str) -> Any:
    args = FACE_ARGS[name]
    if name == "run":  # its flags go before the prompt; the keyless provider answers
        return CliRunner().invoke(cli, ["run", "--script", "s.json", *flags, "hi"])
    return CliRunner().invoke(cli, [*args, *flags])


@pytest.mark.parametrize("name", sorted(FACE_ARGS))
def test_every_face_hands_on_yes_and_the_allowed_kinds(
    name: str, handed_on: dict[str, ApprovalFlags]
) -> None:
    result = invoke(name, "--yes", "--allow", " bash, mcp,write ")
    assert result.exit_code == 0, result.output
    assert handed_on[name] == ApprovalFlags(yes=True, allow=frozenset({"shell", "mcp", "write"}))
    handed_on.clear()
    assert invoke(name).exit_code == 0
    assert handed_on[name] == ApprovalFlags()


@pytest.mark.parametrize("name", sorted(FACE_ARGS))
def test_every_face_refuses_an_unknown_kind_in_the_same_line_before_starting(
    name: str, handed_on: dict[str, ApprovalFlags]
) -> None:
    result = invoke(name, "--allow", "bash,rm")
    assert result.exit_code == 2, result.output
    assert result.output == "dsh: error: --allow takes bash, write, network and/or mcp, not 'rm'\n"
    assert handed_on == {}


def test_approval_flags_before_a_command_are_refused(handed_on: dict[str, ApprovalFlags]) -> None:
    result = CliRunner().invoke(cli, ["--yes", "--allow", "bash", "sessions", "list"])
    assert result.exit_code == 2, result.output
    assert "--yes, --allow before a command open the terminal UI" in result.output
