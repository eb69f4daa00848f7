"""Programs dsh starts by name are found on ``PATH``'s absolute entries only: with
``PATH=:/usr/bin:/bin`` (or ``.``, or ``bin``) a repository's ``./bash`` or ``./git`` would be
what ``execvp`` finds first, and it would run before anything was approved. Each test plants
such a program in the directory an empty entry names (the workspace, dsh's own directory) that
leaves a marker if run, and checks the real one ran instead."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dsh.agent.environment import bash_shell
from dsh.agent.workspace_diff import workspace_diff
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.git_hooks import git_layout
from dsh.tools.program_path import absolute_entries, clean_path, find_program
from dsh.tools.secrets import SecretPolicy
from dsh.tools.shell import BashTool
from dsh.tui.external_editor import editor_command

REAL = "/usr/bin:/bin"
UNSAFE_PATHS = {
    "empty entry": f":{REAL}",
    "trailing colon": f"{REAL}:",
    "double colon": "/usr/bin::/bin",
    "dot": f".:{REAL}",
    "relative": f"planted:{REAL}",
}


def plant(where: Path, name: str, marker: Path) -> None:
    """An executable ``name`` in ``where`` (and in ``where/planted``) that leaves ``marker``."""
    for folder in (where, where / "planted"):
        folder.mkdir(exist_ok=True)
        program = folder / name
        program.write_text(f"#!/bin/sh\ntouch {marker}\necho planted\n")
        program.chmod(0o755)


@pytest.fixture(params=UNSAFE_PATHS.values(), ids=UNSAFE_PATHS.keys())
def unsafe_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PATH", request.param)
    return str(request.param)


def test_the_rule_keeps_only_absolute_entries_in_order() -> None:
    assert absolute_entries(":/usr/bin:.:bin::/bin:") == ["/usr/bin", "/bin"]
    assert absolute_entries(b":/usr/bin:./x:/bin") == [b"/usr/bin", b"/bin"]
    assert clean_path("/opt/x/bin::.:/usr/bin") == "/opt/x/bin:/usr/bin"
    home = os.path.expanduser("~")
    assert clean_path("~/bin:/usr/bin") == f"{home}/bin:/usr/bin"  # bash expands it: kept
    # none left: the system's default, never an empty PATH (the current directory again)
    assert clean_path(":.:bin") == clean_path(None) == os.defpath
    assert find_program("sh", {"PATH": ":/nowhere:/bin:/usr/bin"}) in ("/bin/sh", "/usr/bin/sh")
    assert find_program("./x", {"PATH": ""}) == "./x"  # a path already


def test_find_program_skips_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unsafe_path: str
) -> None:
    plant(tmp_path, "dsh-planted", tmp_path / "RAN")
    monkeypatch.chdir(tmp_path)
    assert find_program("dsh-planted") is None
    assert shutil.which("dsh-planted") is not None  # execvp's search finds the planted one


def test_the_bash_probe_of_a_session_opening_runs_no_planted_bash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unsafe_path: str
) -> None:
    """The audit's repro: ``bash_shell()`` runs when a session opens, before any approval."""
    marker = tmp_path / "RAN"
    plant(tmp_path, "bash", marker)
    monkeypatch.chdir(tmp_path)
    bash_shell.cache_clear()
    try:
        assert bash_shell().startswith("bash ") and bash_shell()[5].isdigit()
    finally:
        bash_shell.cache_clear()
    assert not marker.exists()


def test_the_bash_tool_runs_the_real_bash_with_a_clean_path(
    workspace: Path, ctx: ToolContext, tmp_path: Path, unsafe_path: str
) -> None:
    """The bash tool's shell is found on the command's own PATH by the keeper, in the
    workspace: the planted ``./bash`` there is not it, and the command's PATH has no empty or
    relative entry left (a command run by name finds no workspace program either)."""
    marker = tmp_path / "RAN"
    plant(workspace, "bash", marker)
    plant(workspace, "ls", marker)
    result: ToolOutput = asyncio.run(BashTool().run({"command": 'echo "[$PATH]"; ls -d .'}, ctx))
    assert not marker.exists()
    assert result.is_error is False, result.text
    assert f"[{clean_path(unsafe_path)}]" in result.text and "planted" not in result.text


def test_dsh_runs_no_planted_git(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unsafe_path: str
) -> None:
    """``/diff`` and the protected-write check run git before any approval, from dsh's own
    directory (here the workspace)."""
    subprocess.run(["/usr/bin/git", "init", "-q", str(workspace)], check=True)
    marker = tmp_path / "RAN"
    plant(workspace, "git", marker)
    monkeypatch.chdir(workspace)
    layout = git_layout(workspace)
    assert layout.hooks == (workspace / ".git" / "hooks").resolve()
    workspace_diff(workspace)
    assert not marker.exists()


def test_the_environment_commands_get_has_a_clean_path(unsafe_path: str) -> None:
    """Every process dsh starts gets it: commands, MCP servers, git, the browser helper."""
    assert SecretPolicy().scrubbed_environment()["PATH"] == clean_path(unsafe_path)
    assert SecretPolicy().scrubbed_environment({"PATH": ":.:/usr/bin"}) == {"PATH": "/usr/bin"}


def test_the_fallback_editor_is_not_the_workspace_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant(tmp_path, "nano", tmp_path / "RAN")
    monkeypatch.chdir(tmp_path)
    assert editor_command({"PATH": ":/nowhere"}) is None
    assert editor_command({"PATH": ":/nowhere", "VISUAL": "nano -w"}) == ["nano", "-w"]


def test_the_keeper_finds_a_call_s_program_in_absolute_entries_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An MCP server's configured ``env`` may set its own PATH: the keeper, which runs the
    call in the workspace, still looks in its absolute entries only."""
    from dsh.tools.keeper import _program_path

    plant(tmp_path, "dsh-planted", tmp_path / "RAN")
    monkeypatch.chdir(tmp_path)
    for path in (b":/usr/bin", b".:/usr/bin", b"planted:/usr/bin"):
        with pytest.raises(FileNotFoundError):
            _program_path(b"dsh-planted", {b"PATH": path})
    assert _program_path(b"sh", {b"PATH": b":/usr/bin:/bin"}) in (b"/usr/bin/sh", b"/bin/sh")
