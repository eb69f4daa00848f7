"""Git's configuration outside a directory named ``.git`` is protected as ``.git`` is: a file
an ``include.path`` names, a git directory of another name (``--separate-git-dir``, a bare
repository), and the user's own ``~/.gitconfig`` / ``~/.config/git/config`` when the workspace
holds them. A write there is asked every time and refused headless, because git runs what it
sets (``core.fsmonitor``, ``core.pager``) on the user's next git command. Real repositories made
with the real git; a ``git status`` shows the files found are the ones git reads."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext
from dsh.tools.git_hooks import git_layout
from dsh.tools.protected import protected_write
from tests.tools.test_approval import ScriptedApprover
from tests.tools.test_protected_paths import HEADLESS_POLICIES, WRITE_FILE, run_call

ALLOW_WRITE = HEADLESS_POLICIES["allow-write"]
GIT_WHY = "changes git's own configuration, which can run commands"


@pytest.fixture(autouse=True)
def _own_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Git reads only the test's files: no user or system config, no repository above."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


def git(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=where, capture_output=True, text=True, check=True,
    )  # fmt: skip


def fsmonitor(marker: Path) -> str:
    """A config that makes the next ``git status`` run a command leaving ``marker``."""
    return f'[core]\n\tfsmonitor = "touch {marker}; false"\n'


def why(ctx: ToolContext, path: str) -> str | None:
    found = protected_write(WRITE_FILE, {"path": path, "content": ""}, ctx.workspace)
    return None if found is None else found.why


@pytest.mark.parametrize("policy", HEADLESS_POLICIES.values(), ids=HEADLESS_POLICIES.keys())
def test_an_included_config_file_is_refused_headless_and_git_runs_what_it_sets(
    workspace: Path, ctx: ToolContext, tmp_path: Path, policy: object
) -> None:
    """The audit's repro: ``include.path = ../.gitconfig`` (relative to ``.git/``), a file that
    sets nothing yet. Refused, git status runs nothing; the same content written by the user
    runs on git status (the control: it is the file git reads)."""
    git(workspace, "init", "-q")
    git(workspace, "config", "include.path", "../.gitconfig")
    (workspace / ".gitconfig").write_text("[diff]\n")
    marker = tmp_path / "INCLUDE_RAN"
    out = run_call(
        ctx, "write_file", {"path": ".gitconfig", "content": fsmonitor(marker)}, policy()
    )
    assert out.code == "DENIED" and f"writing .gitconfig {GIT_WHY}" in out.text
    git(workspace, "status")
    assert not marker.exists()
    (workspace / ".gitconfig").write_text(fsmonitor(marker))
    git(workspace, "status")
    assert marker.exists()


def test_every_file_an_include_names_is_caught_whether_it_exists_or_its_condition_holds(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(workspace / "home"))
    git(workspace, "init", "-q")
    git(workspace, "config", "--add", "include.path", "~/tilde.gitconfig")
    git(workspace, "config", "--add", "include.path", "%(prefix)/etc/shared.gitconfig")
    git(
        workspace, "config", "--add", "include.path", "../config/shared.gitconfig"
    )  # no such file yet
    git(workspace, "config", "includeIf.onbranch:release.path", "../config/release.gitconfig")
    git(workspace, "config", "--add", "include.path", str(workspace / "abs.gitconfig"))
    (workspace / "abs.gitconfig").write_text("[include]\n\tpath = nested/more.gitconfig\n")
    for path in (
        "config/shared.gitconfig",
        "config/release.gitconfig",  # the branch is not release: git would read it on one
        "abs.gitconfig",
        "nested/more.gitconfig",  # named by an included file, relative to that file
        "home/tilde.gitconfig",
        "CONFIG/../config/Shared.gitconfig",
    ):
        assert why(ctx, path) == f"writing {path_shown(path)} {GIT_WHY}", path
    for ordinary in ("config/other.gitconfig", ".gitconfig", "src/app.py"):
        assert why(ctx, ordinary) is None, ordinary


def path_shown(path: str) -> str:
    return {"CONFIG/../config/Shared.gitconfig": "config/Shared.gitconfig"}.get(path, path)


@pytest.mark.parametrize(
    "path", ["gitdata/config", "gitdata/hooks/pre-commit", "gitdata/info/attributes"]
)
def test_a_separate_git_directory_is_protected_whatever_its_name(
    workspace: Path, ctx: ToolContext, tmp_path: Path, path: str
) -> None:
    git(workspace, "init", "-q", "--separate-git-dir=gitdata", ".")
    assert why(ctx, path) == f"writing {path} {GIT_WHY}"
    assert why(ctx, "gitdata-notes.md") is None and why(ctx, "src/app.py") is None


def test_a_separate_git_dirs_config_edit_is_refused_and_git_runs_nothing(
    workspace: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    git(workspace, "init", "-q", "--separate-git-dir=gitdata", ".")
    marker = tmp_path / "FSMON_RAN"
    edit = {"path": "gitdata/config", "old": "[core]", "new": fsmonitor(marker).rstrip("\n")}
    out = run_call(ctx, "edit_file", edit, ALLOW_WRITE())
    assert out.code == "DENIED" and f"writing gitdata/config {GIT_WHY}" in out.text
    git(workspace, "status")
    assert not marker.exists()


def test_a_bare_repository_in_the_workspace_is_protected_though_git_does_not_name_it(
    workspace: Path, ctx: ToolContext
) -> None:
    """``origin.git``, a local remote: found by what it holds, as git finds a git directory,
    with no git run for it (no repository around it here at all)."""
    git(workspace, "init", "-q", "--bare", "origin.git")
    assert git_layout(ctx.workspace).git_dirs == ()
    for path in ("origin.git/config", "origin.git/hooks/pre-receive", "origin.git/hooks/../config"):
        assert why(ctx, path) is not None, path
    assert why(ctx, "origin.git.md") is None and why(ctx, "origin/hooks/x") is None


def test_the_users_global_config_is_protected_when_the_workspace_is_home(
    workspace: Path, ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dotfiles session (``dsh`` in ``$HOME``): ``~/.gitconfig`` and ``~/.config/git/config``,
    set or not yet, refused; a repository elsewhere would run what they set."""
    monkeypatch.setenv("HOME", str(workspace))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL")
    project = tmp_path / "proj"
    project.mkdir()
    git(project, "init", "-q")
    marker = tmp_path / "GLOBAL_RAN"
    for path in (".gitconfig", ".config/git/config"):
        out = run_call(
            ctx, "write_file", {"path": path, "content": fsmonitor(marker)}, ALLOW_WRITE()
        )
        assert out.code == "DENIED" and f"writing {path} {GIT_WHY}" in out.text
    git(project, "status")
    assert not marker.exists()
    (workspace / ".config" / "git").mkdir(parents=True)
    (workspace / ".config" / "git" / "config").write_text(fsmonitor(marker))
    git(project, "status")
    assert marker.exists()  # the control: git reads that file
    assert why(ctx, ".gitconfig.bak") is None and why(ctx, ".config/other/config") is None


def test_the_global_and_system_files_git_is_pointed_at_are_protected_where_they_lie(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``XDG_CONFIG_HOME``, ``GIT_CONFIG_GLOBAL`` and ``GIT_CONFIG_SYSTEM`` inside the workspace,
    and a ``~/.gitconfig`` that is a symlink to a dotfiles workspace's file."""
    monkeypatch.delenv("GIT_CONFIG_GLOBAL")
    monkeypatch.setenv("HOME", str(workspace.parent / "home"))
    (workspace.parent / "home").mkdir()
    (workspace.parent / "home" / ".gitconfig").symlink_to(workspace / "gitconfig")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(workspace / "xdg"))
    assert why(ctx, "gitconfig") == f"writing gitconfig {GIT_WHY}"
    assert why(ctx, "xdg/git/config") == f"writing xdg/git/config {GIT_WHY}"
    assert why(ctx, ".config/git/config") is None  # XDG_CONFIG_HOME moved it
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(workspace / "global.cfg"))
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(workspace / "system.cfg"))
    assert why(ctx, "global.cfg") is not None and why(ctx, "system.cfg") is not None
    assert why(ctx, "gitconfig") is None  # GIT_CONFIG_GLOBAL replaces ~/.gitconfig


def test_a_write_to_gits_config_is_asked_every_time_and_never_always_allowed(
    workspace: Path, ctx: ToolContext
) -> None:
    git(workspace, "init", "-q", "--separate-git-dir=gitdata", ".")
    git(workspace, "config", "include.path", "../shared.gitconfig")
    approver = ScriptedApprover("always", "always")
    policy = ApprovalPolicy("auto", approver=approver)
    for path in ("gitdata/config.extra", "shared.gitconfig"):
        run_call(ctx, "write_file", {"path": path, "content": "[diff]\n"}, policy)
    assert approver.protected == [
        f"writing gitdata/config.extra {GIT_WHY}",
        f"writing shared.gitconfig {GIT_WHY}",
    ]
    assert policy.always_allowed_tools == frozenset()


def test_without_git_the_git_directories_that_look_like_one_are_still_caught(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    git(workspace, "init", "-q", "--separate-git-dir=gitdata", ".")
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    assert git_layout(ctx.workspace).git_dirs == ()
    assert why(ctx, "gitdata/config") == f"writing gitdata/config {GIT_WHY}"
    assert why(ctx, "src/app.py") is None


def test_asking_git_runs_nothing_the_repositorys_config_names(
    workspace: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    """The check itself reads the config git reads, a hostile one too: no filesystem monitor,
    pager or hook runs for it."""
    git(workspace, "init", "-q")
    marker = tmp_path / "CHECK_RAN"
    git(workspace, "config", "core.fsmonitor", f"touch {marker}; false")
    git(workspace, "config", "core.pager", f"touch {marker}; cat")
    (workspace / ".git" / "hooks" / "post-index-change").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (workspace / ".git" / "hooks" / "post-index-change").chmod(0o755)
    layout = git_layout(ctx.workspace)
    assert layout.git_dirs == (ctx.workspace / ".git",)
    assert ctx.workspace / ".git" / "config" in layout.config_files
    assert why(ctx, "src/app.py") is None
    assert not marker.exists()
