"""Git hooks outside ``.git`` are protected as ``.git`` is: a file tool's write to the directory
the repository's ``core.hooksPath`` names, to ``.husky/``, to ``.pre-commit-config.yaml``, or to
the file a hook symlinks to, is asked every time and refused headless, because git runs it on
the user's next commit. The hooks directory is git's own answer, read afresh at each check, in
real repositories made with the real git; a ``git commit`` shows the hooks found are the ones
git runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext
from dsh.tools.git_hooks import hooks_dir
from dsh.tools.protected import protected_write
from tests.tools.test_approval import ScriptedApprover
from tests.tools.test_protected_paths import HEADLESS_POLICIES, WRITE_FILE, run_call

HOOK = "#!/bin/sh\necho RAN > pwned.txt\n"
ALLOW_WRITE = HEADLESS_POLICIES["allow-write"]


@pytest.fixture(autouse=True)
def _own_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Git reads only the test's repositories: no user or system config (a global
    core.hooksPath would change the answers), and no repository above tmp_path."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def git(where: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=where, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


@pytest.fixture
def repo(workspace: Path) -> Path:
    """The workspace as a real git repository with one ordinary file."""
    git(workspace, "init", "-q")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('app')\n")
    return workspace


def protected(ctx: ToolContext, path: str) -> str | None:
    """The reason a write of ``path`` is asked every time, or None for an ordinary file."""
    found = protected_write(WRITE_FILE, {"path": path, "content": ""}, ctx.workspace)
    return None if found is None else found.why


@pytest.mark.parametrize("policy", HEADLESS_POLICIES.values(), ids=HEADLESS_POLICIES.keys())
def test_a_headless_write_to_the_hooks_path_is_refused_and_an_ordinary_one_is_not(
    repo: Path, ctx: ToolContext, policy: Any
) -> None:
    git(repo, "config", "core.hooksPath", ".githooks")
    out = run_call(ctx, "write_file", {"path": ".githooks/pre-commit", "content": HOOK}, policy())
    assert out.is_error and out.code == "DENIED" and "\n" not in out.text
    assert "writing .githooks/pre-commit changes the git hooks, which can run commands" in out.text
    assert not (repo / ".githooks").exists()
    ordinary = run_call(ctx, "write_file", {"path": "src/new.py", "content": "x\n"}, policy())
    assert not ordinary.is_error and (repo / "src" / "new.py").read_text() == "x\n"


def test_a_hook_refused_is_not_run_by_the_next_commit_and_one_written_is(
    repo: Path, ctx: ToolContext
) -> None:
    """The directory protected is the one git runs hooks from: the same hook, written by the
    user, runs on the commit."""
    git(repo, "config", "core.hooksPath", ".githooks")
    hook = {"path": ".githooks/pre-commit", "content": HOOK}
    assert run_call(ctx, "write_file", hook, ALLOW_WRITE()).code == "DENIED"
    git(repo, "add", "src")
    git(repo, "commit", "-q", "-m", "one")
    assert not (repo / "pwned.txt").exists()
    (repo / ".githooks").mkdir()
    (repo / ".githooks" / "pre-commit").write_text(HOOK)
    (repo / ".githooks" / "pre-commit").chmod(0o755)
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    assert (repo / "pwned.txt").read_text() == "RAN\n"  # the control: git ran it


@pytest.mark.parametrize(
    "path",
    [
        ".githooks/pre-commit",
        ".githooks/lib/common.sh",  # a hook may source anything beside it
        ".GitHooks/post-checkout",
        "src/../.githooks/pre-push",
        "hooks-link/commit-msg",  # through a symlink to the directory
    ],
)
def test_every_spelling_of_a_file_in_the_hooks_path_is_caught(
    repo: Path, ctx: ToolContext, path: str
) -> None:
    git(repo, "config", "core.hooksPath", ".githooks")
    (repo / ".githooks").mkdir()
    (repo / "hooks-link").symlink_to(".githooks")
    assert protected(ctx, path) is not None
    assert protected(ctx, "src/app.py") is None
    assert protected(ctx, ".githooks-notes.md") is None


def test_a_relative_hooks_path_is_taken_from_the_repository_top_not_the_workspace(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dsh run in a subdirectory of the repository: ``pkg/hooks`` is the top level's pkg/hooks
    (here the workspace's ``hooks/``), as git runs it, not the workspace's ``pkg/hooks``."""
    package = repo / "pkg"
    (package / "hooks").mkdir(parents=True)
    git(repo, "config", "core.hooksPath", "pkg/hooks")
    ctx = ToolContext(workspace=package.resolve(), session_id="s", call_id="c")
    found = protected_write(WRITE_FILE, {"path": "hooks/pre-commit"}, ctx.workspace)
    assert found is not None and found.path == "hooks/pre-commit" and found.owner == "git hooks"
    assert protected(ctx, "pkg/hooks/pre-commit") is None
    (package / "hooks" / "pre-commit").write_text(HOOK)
    (package / "hooks" / "pre-commit").chmod(0o755)
    git(package, "commit", "-q", "--allow-empty", "-m", "from the package")
    assert (repo / "pwned.txt").exists() and not (package / "pwned.txt").exists()  # git's cwd


def test_an_absolute_a_home_relative_and_an_included_hooks_path_are_read_as_git_reads_them(
    repo: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(repo, "config", "core.hooksPath", str(repo / "abs-hooks"))
    assert protected(ctx, "abs-hooks/pre-commit") is not None
    monkeypatch.setenv("HOME", str(repo))
    git(repo, "config", "core.hooksPath", "~/tilde-hooks")
    assert protected(ctx, "tilde-hooks/pre-commit") is not None
    assert protected(ctx, "abs-hooks/pre-commit") is None
    git(repo, "config", "--unset", "core.hooksPath")
    (repo / "team.gitconfig").write_text("[core]\n\thooksPath = included-hooks\n")
    git(repo, "config", "include.path", str(repo / "team.gitconfig"))
    assert protected(ctx, "included-hooks/pre-commit") is not None


def test_a_linked_worktrees_own_hooks_path_counts_in_that_worktree_only(
    repo: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    """dsh run in a ``git worktree``: the hooks path set in that worktree's own config."""
    git(repo, "add", "src")
    git(repo, "commit", "-q", "-m", "one")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    git(repo, "config", "extensions.worktreeConfig", "true")
    git(linked, "config", "--worktree", "core.hooksPath", "hooks")
    there = ToolContext(workspace=linked.resolve(), session_id="s", call_id="c")
    assert protected(there, "hooks/pre-commit") is not None
    assert protected(ctx, "hooks/pre-commit") is None


def test_a_config_change_is_seen_at_the_next_check(repo: Path, ctx: ToolContext) -> None:
    assert protected(ctx, "tools/hooks/pre-commit") is None
    git(repo, "config", "core.hooksPath", "tools/hooks")
    assert protected(ctx, "tools/hooks/pre-commit") is not None
    git(repo, "config", "--unset", "core.hooksPath")
    assert protected(ctx, "tools/hooks/pre-commit") is None


def test_a_hooks_path_outside_the_workspace_protects_nothing_inside_it(
    repo: Path, ctx: ToolContext, outside: Path
) -> None:
    git(repo, "config", "core.hooksPath", str(outside))
    assert hooks_dir(ctx.workspace) == outside.resolve()
    for path in ("pre-commit", "hooks/pre-commit", "src/app.py"):
        assert protected(ctx, path) is None
    out = run_call(ctx, "write_file", {"path": "pre-commit", "content": "x\n"}, ALLOW_WRITE())
    assert not out.is_error and (repo / "pre-commit").read_text() == "x\n"


def test_a_hooks_path_naming_the_workspace_itself_protects_only_the_hooks_there(
    repo: Path, ctx: ToolContext
) -> None:
    """``core.hooksPath = .``: git runs ``./pre-commit``, not every file of the repository."""
    git(repo, "config", "core.hooksPath", ".")
    assert protected(ctx, "pre-commit") is not None
    assert protected(ctx, "Post-Merge") is not None
    for path in ("README.md", "src/pre-commit", "src/app.py"):
        assert protected(ctx, path) is None


def test_the_file_a_hook_symlinks_to_is_a_hook(repo: Path, ctx: ToolContext) -> None:
    """A hook kept in the tree and linked from ``.git/hooks`` (a common setup) runs as the hook
    does, so writing it is writing the hook."""
    (repo / "scripts").mkdir()
    (repo / "scripts" / "pre-commit.sh").write_text("#!/bin/sh\n")
    (repo / ".git" / "hooks" / "pre-commit").symlink_to(repo / "scripts" / "pre-commit.sh")
    assert protected(ctx, "scripts/pre-commit.sh") == (
        "writing scripts/pre-commit.sh changes the git hooks, which can run commands"
    )
    assert protected(ctx, "scripts/other.sh") is None
    out = run_call(ctx, "edit_file", {"path": "scripts/pre-commit.sh", "old": "sh", "new": "x"},
                   ALLOW_WRITE())  # fmt: skip
    assert (
        out.code == "DENIED" and (repo / "scripts" / "pre-commit.sh").read_text() == "#!/bin/sh\n"
    )


@pytest.mark.parametrize(
    "path",
    [
        ".husky/pre-commit",
        ".husky/_/h",  # husky's own runner, which every hook in .husky/_ sources
        ".Husky/pre-push",
        "web/.husky/pre-commit",  # a package's own husky in a monorepo
        ".pre-commit-config.yaml",
        ".PRE-COMMIT-CONFIG.yaml",
        "services/api/.pre-commit-config.yaml",
        "src/../.pre-commit-config.yaml",
    ],
)
def test_husky_and_pre_commit_files_are_refused_headless_even_outside_a_repository(
    workspace: Path, ctx: ToolContext, path: str
) -> None:
    """Named like ``.git``: no repository (nor git) is needed to know them, since the files come
    before ``husky``/``pre-commit install`` does."""
    assert hooks_dir(ctx.workspace) is None
    out = run_call(ctx, "write_file", {"path": path, "content": HOOK}, ApprovalPolicy("auto"))
    assert out.code == "DENIED" and "changes the git hooks, which can run commands" in out.text
    assert not (workspace / path).exists()


@pytest.mark.parametrize(
    "path", [".pre-commit-hooks.yaml", "pre-commit-config.yaml", ".huskyrc.md", "husky/x"]
)
def test_files_named_alike_are_ordinary(workspace: Path, ctx: ToolContext, path: str) -> None:
    assert protected(ctx, path) is None


def test_a_protected_hook_is_asked_every_time_with_its_reason(repo: Path, ctx: ToolContext) -> None:
    """In the UI, even with ``--yes``: each write is put to the person, saying why, and an
    "always" answer covers only that one write."""
    git(repo, "config", "core.hooksPath", ".githooks")
    approver = ScriptedApprover("always", "always", "deny")
    policy = ApprovalPolicy("auto", approver=approver)
    for path in (".githooks/pre-commit", ".husky/pre-commit", ".pre-commit-config.yaml"):
        run_call(ctx, "write_file", {"path": path, "content": "x\n"}, policy)
    assert approver.protected == [
        "writing .githooks/pre-commit changes the git hooks, which can run commands",
        "writing .husky/pre-commit changes the git hooks, which can run commands",
        "writing .pre-commit-config.yaml changes the git hooks, which can run commands",
    ]
    assert (repo / ".husky" / "pre-commit").exists() and not (
        repo / ".pre-commit-config.yaml"
    ).exists()
    assert policy.always_allowed_tools == frozenset()


def test_without_git_or_a_repository_only_the_named_paths_are_protected(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No repository, or no git on PATH: nothing extra, nothing broken; ``.git`` and ``.husky``
    are still caught by name."""
    for path_env in (os.environ["PATH"], str(tmp_path / "no-programs-here")):
        monkeypatch.setenv("PATH", path_env)
        assert hooks_dir(ctx.workspace) is None
        assert protected(ctx, ".githooks/pre-commit") is None
        assert protected(ctx, ".git/hooks/pre-commit") is not None
        assert protected(ctx, ".husky/pre-commit") is not None
        out = run_call(ctx, "write_file", {"path": "notes.md", "content": "x\n"}, ALLOW_WRITE())
        assert not out.is_error and (workspace / "notes.md").read_text() == "x\n"
