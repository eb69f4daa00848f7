"""A file git's config names as a program is protected as the config is: with
``core.fsmonitor = ./x`` (or a ``textconv``, a filter, an ``alias`` with ``!``, …) already set,
writing ``./x`` runs code on the user's next git command, so the write is asked every time and
refused headless. Real repositories made with the real git; ``git status`` shows the program
named is the one git runs, from the repository's top level."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dsh.tools.base import ToolContext
from dsh.tools.git_hooks import git_layout
from dsh.tools.git_programs import named_files, named_programs, program_setting
from dsh.tools.protected import protected_write
from tests.tools.test_protected_paths import HEADLESS_POLICIES, WRITE_FILE, run_call

PROGRAM_WHY = "which git runs on your next git command"


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


def program(path: Path, marker: Path) -> str:
    """A program that leaves ``marker`` and fails (an fsmonitor hook that fails is ignored)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 1\n")  # the user's own, harmless
    path.chmod(0o755)
    return f"#!/bin/sh\ntouch {marker}\nexit 1\n"


def why(workspace: Path, path: str) -> str | None:
    found = protected_write(WRITE_FILE, {"path": path, "content": ""}, workspace)
    return None if found is None else found.why


@pytest.mark.parametrize("policy", HEADLESS_POLICIES.values(), ids=HEADLESS_POLICIES.keys())
def test_the_fsmonitor_program_is_refused_headless_and_git_runs_it(
    workspace: Path, ctx: ToolContext, tmp_path: Path, policy: object
) -> None:
    """The audit's repro: ``core.fsmonitor = ./x`` in ``.git/config``; writing ``./x`` would run
    on the next ``git status``. Refused, nothing runs; the same content written by the user
    runs (the control: it is the program git runs)."""
    git(workspace, "init", "-q")
    git(workspace, "config", "core.fsmonitor", "./x")
    marker = tmp_path / "FSMONITOR_RAN"
    attack = program(workspace / "x", marker)
    out = run_call(ctx, "write_file", {"path": "x", "content": attack}, policy())  # type: ignore[operator]
    assert out.code == "DENIED", out.text
    assert f"writing x changes a program git's config names (core.fsmonitor), {PROGRAM_WHY}" in (
        out.text
    )
    git(workspace, "status")
    assert not marker.exists()
    (workspace / "x").write_text(attack)
    git(workspace, "status")
    assert marker.exists()


SETTINGS = [
    ("core.sshCommand", "./tools/ssh-wrapper -v", "tools/ssh-wrapper"),
    ("diff.pdf.textconv", "sh scripts/pdf2txt.sh", "scripts/pdf2txt.sh"),
    ("filter.crypt.clean", "./crypt clean %f", "crypt"),
    ("filter.crypt.smudge", "python3 tools/crypt.py smudge", "tools/crypt.py"),
    ("filter.crypt.process", "bin/filter-process", "bin/filter-process"),
    ("credential.helper", "!./cred-helper get", "cred-helper"),
    ("credential.https://example.com.helper", "!f() { ./cred; }; f", "cred"),
    ("core.editor", "./edit --wait", "edit"),
    ("sequence.editor", "GIT_X=1 ./rebase-editor", "rebase-editor"),
    ("core.pager", "./page | less", "page"),
    ("pager.log", "./logpager", "logpager"),
    ("gpg.program", "./gpg-wrapper", "gpg-wrapper"),
    ("gpg.ssh.program", "tools/sign", "tools/sign"),
    ("alias.st", "!./status.sh --short", "status.sh"),
    ("merge.ours.driver", "./merge-driver %O %A %B", "merge-driver"),
    ("submodule.lib.update", "!./update-lib", "update-lib"),
]


@pytest.mark.parametrize(("key", "value", "path"), SETTINGS, ids=[s[0] for s in SETTINGS])
def test_each_setting_git_runs_protects_the_file_it_names(
    workspace: Path, key: str, value: str, path: str
) -> None:
    git(workspace, "init", "-q")
    git(workspace, "config", key, value)
    said = why(workspace, path)
    assert said is not None and f"({key.lower()})" in said.lower() and PROGRAM_WHY in said
    assert why(workspace, "README.md") is None


def test_an_alias_without_a_bang_and_other_settings_name_no_program(workspace: Path) -> None:
    git(workspace, "init", "-q")
    git(workspace, "config", "alias.st", "status ./x")  # a git command: runs no file
    git(workspace, "config", "user.name", "./x")
    git(workspace, "config", "core.fsmonitor", "false")
    git(workspace, "config", "core.editor", "vim")  # found on PATH, not in the workspace
    for name in ("x", "status", "vim", "false"):
        assert why(workspace, name) is None, name


def test_a_relative_program_is_taken_from_the_top_level_and_from_the_workspace(
    tmp_path: Path,
) -> None:
    """dsh's workspace is a subdirectory of the repository: git runs ``./x`` from the top
    level, which lies outside the workspace, so ``sub/x`` named there is the workspace's ``x``;
    and a user running git in the workspace makes ``./x`` there count too."""
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "core.fsmonitor", "sub/hook")
    git(repo, "config", "diff.x.textconv", "./conv")
    workspace = repo / "sub"
    layout = git_layout(workspace.resolve())
    named = {p.path for p in layout.programs}
    assert (repo / "sub" / "hook").resolve() in named
    assert why(workspace, "hook") is not None
    assert why(workspace, "conv") is not None  # ./conv from the workspace
    assert why(workspace, "other") is None


def test_a_program_named_in_an_included_file_or_through_a_symlink_counts(
    workspace: Path,
) -> None:
    git(workspace, "init", "-q")
    (workspace / "team.gitconfig").write_text('[diff "img"]\n\ttextconv = ./img2txt\n')
    git(workspace, "config", "include.path", "../team.gitconfig")
    (workspace / "tools").mkdir()
    (workspace / "tools" / "real-img2txt").write_text("#!/bin/sh\n")
    (workspace / "img2txt").symlink_to(Path("tools") / "real-img2txt")
    said = why(workspace, "tools/real-img2txt")
    assert said is not None and "(diff.img.textconv)" in said
    assert why(workspace, "img2txt") is not None


def test_a_repository_s_subsection_is_shown_printable_in_the_prompt(workspace: Path) -> None:
    git(workspace, "init", "-q")
    (workspace / ".git" / "config").write_text('[diff "a\\tb\x1b[31m"]\n\ttextconv = ./conv\n')
    said = why(workspace, "conv")
    assert said is not None and "\x1b" not in said and "\\x1b" in said


def test_the_words_of_a_value() -> None:
    assert program_setting("core.bare") is None and program_setting("remote.o.url") is None
    assert program_setting("alias.x") == "bang" and program_setting("diff.A.textconv")
    assert named_files("git status", bang=True) == []
    assert named_files("cat") == [] and named_files("code --wait") == []
    assert "./x" in named_files("!f() { ./x; }; f", bang=True)
    assert named_files("env A=1 ./y --opt=./z %f") == ["./y", "./z"]
    assert named_files("'unclosed ./q") == ["./q"]
    assert named_files("/opt/My Tools/gpg -v") == ["/opt/My Tools/gpg -v", "/opt/My", "Tools/gpg"]
    assert named_programs([("core.fsmonitor", "~nobody-such/x")], [Path("/")]) == ()
