"""The other hook managers' configuration is protected as ``.husky/`` is: a file tool's write to
lefthook's, husky v4's, lint-staged's, simple-git-hooks' or overcommit's config files (by the
names each documents, anywhere in the workspace) is asked every time and refused headless, saying
whose config it is, because once the manager's hooks are installed the next ``git commit`` runs
what it says. A protected name that leads to a file counts as the file's own name does: the path
as given, and a symlink at the workspace's top level."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext
from dsh.tools.protected import protected_write
from tests.tools.test_approval import ScriptedApprover
from tests.tools.test_protected_paths import HEADLESS_POLICIES, WRITE_FILE, run_call

ALLOW_WRITE = HEADLESS_POLICIES["allow-write"]
PLANTED = "pre-commit:\n  commands:\n    x:\n      run: echo RAN > pwned.txt\n"

FAMILIES = {
    "lefthook": [
        "lefthook.yml",
        "lefthook.yaml",
        ".lefthook.yml",
        ".lefthook.yaml",
        "lefthook.json",
        ".lefthook.jsonc",
        "lefthook.toml",
        ".config/lefthook.yml",
        "lefthook-local.yml",
        "lefthook-local.yaml",
        ".lefthook-local.yml",
        ".lefthook-local.toml",
        ".config/lefthook-local.json",
        ".lefthook/pre-commit/lint.sh",  # the scripts lefthook runs
        ".lefthook-local/pre-push/check.sh",
        "services/api/lefthook.yml",  # a package's own, in a monorepo
        "LeftHook.YML",  # one and the same file on a case-insensitive disk
    ],
    "husky": [
        ".huskyrc",
        ".huskyrc.json",
        ".huskyrc.yaml",
        ".huskyrc.yml",
        ".huskyrc.js",
        ".huskyrc.cjs",
        "husky.config.js",
        "husky.config.cjs",
    ],
    "lint-staged": [
        ".lintstagedrc",
        ".lintstagedrc.json",
        ".lintstagedrc.yaml",
        ".lintstagedrc.yml",
        ".lintstagedrc.mjs",
        ".lintstagedrc.js",
        ".lintstagedrc.cjs",
        ".lintstagedrc.ts",
        "lint-staged.config.js",
        "lint-staged.config.mjs",
        "lint-staged.config.cjs",
        "lint-staged.config.ts",
        "packages/web/.lintstagedrc.json",  # lint-staged reads the one nearest each file
        "package.yaml",  # its "lint-staged" key; YAML is not read to tell which key changes
        "package.yml",
    ],
    "simple-git-hooks": [
        ".simple-git-hooks.cjs",
        ".simple-git-hooks.js",
        ".simple-git-hooks.mjs",
        ".simple-git-hooks.json",
        "simple-git-hooks.cjs",
        "simple-git-hooks.js",
        "simple-git-hooks.mjs",
        "simple-git-hooks.json",
    ],
    "overcommit": [".overcommit.yml", ".git-hooks/pre_commit/planted.rb"],
}
CASES = [(family, path) for family, paths in FAMILIES.items() for path in paths]


@pytest.fixture(autouse=True)
def _own_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Git reads only the test's repositories (no user config, no repository above)."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def git(where: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=where, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


def protected(ctx: ToolContext, path: str) -> str | None:
    found = protected_write(WRITE_FILE, {"path": path, "content": ""}, ctx.workspace)
    return None if found is None else found.why


@pytest.mark.parametrize(("family", "path"), CASES, ids=[path for _, path in CASES])
def test_each_managers_config_is_refused_headless_naming_the_manager(
    workspace: Path, ctx: ToolContext, family: str, path: str
) -> None:
    """``--yes`` does not cover it, and the one-line refusal says whose config it is and that
    it runs on git commit; nothing is written."""
    out = run_call(ctx, "write_file", {"path": path, "content": PLANTED}, ApprovalPolicy("auto"))
    assert out.code == "DENIED" and "\n" not in out.text
    whose = f"{family}'" if family.endswith("s") else f"{family}'s"
    assert f"writing {path} changes {whose} config, which runs commands on git commit" in out.text
    assert not (workspace / path).exists()


@pytest.mark.parametrize(
    ("alike", "config"),
    [
        ("lefthook.md", "lefthook.yml"),
        ("docs/lefthook.html", "docs/lefthook.json"),
        ("lefthook", ".lefthook.toml"),  # lefthook's own binary name, not a config
        (".lefthook-notes.yml", ".lefthook-local.yml"),
        (".huskyrc.md", ".huskyrc"),
        ("husky.config.json", "husky.config.js"),  # husky v4 reads no such file
        (".lintstagedrc.bak", ".lintstagedrc"),
        ("lint-staged.config.json", "lint-staged.config.js"),
        ("simple-git-hooks.yaml", "simple-git-hooks.json"),
        (".overcommit.yaml", ".overcommit.yml"),  # overcommit reads .overcommit.yml only
        ("git-hooks/x", ".git-hooks/x"),
        ("package.json5", "package.yaml"),
    ],
)
def test_names_alike_are_ordinary_beside_the_real_ones(
    workspace: Path, ctx: ToolContext, alike: str, config: str
) -> None:
    assert protected(ctx, config) is not None
    assert protected(ctx, alike) is None
    out = run_call(ctx, "write_file", {"path": alike, "content": "x\n"}, ALLOW_WRITE())
    assert not out.is_error and (workspace / alike).read_text() == "x\n"


def test_a_lefthook_config_in_a_real_repository_is_asked_every_time_and_named(
    workspace: Path, ctx: ToolContext
) -> None:
    """In a repository made with git, where ``lefthook install`` would have pointed the hooks at
    ``lefthook.yml``: the UI asks each write of it with its reason, "always" counting once only,
    while an ordinary file beside it is not asked twice after "always"."""
    git(workspace, "init", "-q")
    (workspace / "lefthook.yml").write_text("pre-commit:\n  commands: {}\n")
    git(workspace, "add", "lefthook.yml")
    git(workspace, "commit", "-q", "-m", "hooks")
    approver = ScriptedApprover("always", "always", "always", "deny")
    policy = ApprovalPolicy("ask", approver=approver)
    for path in ("notes.md", "notes.md", "lefthook.yml", "lefthook.yml"):
        run_call(ctx, "write_file", {"path": path, "content": PLANTED}, policy)
    assert approver.protected == [
        None,  # notes.md, answered "always": not asked again
        "writing lefthook.yml changes lefthook's config, which runs commands on git commit",
        "writing lefthook.yml changes lefthook's config, which runs commands on git commit",
    ]
    assert (workspace / "lefthook.yml").read_text() == PLANTED  # the second answer, "always"
    assert policy.always_allowed_tools == {"write_file"}


@pytest.mark.skipif(shutil.which("lefthook") is None, reason="lefthook is not installed")
def test_lefthook_runs_the_config_dsh_refuses_on_the_next_commit(
    workspace: Path, ctx: ToolContext
) -> None:
    """The control, where lefthook is installed: the config the model was refused, written by
    the user, is what the next commit runs."""
    git(workspace, "init", "-q")
    out = run_call(ctx, "write_file", {"path": "lefthook.yml", "content": PLANTED}, ALLOW_WRITE())
    assert out.code == "DENIED"
    (workspace / "lefthook.yml").write_text(PLANTED)
    subprocess.run(["lefthook", "install"], cwd=workspace, check=True, capture_output=True)
    git(workspace, "commit", "-q", "--allow-empty", "-m", "one")
    assert (workspace / "pwned.txt").read_text().strip() == "RAN"


def test_a_symlink_to_a_managers_config_is_the_config(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "lefthook.yml").write_text("pre-commit: {}\n")
    (workspace / "hooks-link.yml").symlink_to("lefthook.yml")
    (workspace / "rc-dir").mkdir()
    (workspace / "rc-dir" / "rc").symlink_to(workspace / ".huskyrc.json")
    out = run_call(
        ctx, "write_file", {"path": "hooks-link.yml", "content": PLANTED}, ApprovalPolicy("auto")
    )
    assert out.code == "DENIED" and "writing lefthook.yml changes lefthook's config" in out.text
    assert (workspace / "lefthook.yml").read_text() == "pre-commit: {}\n"
    assert protected(ctx, "rc-dir/rc") == (
        "writing .huskyrc.json changes husky's config, which runs commands on git commit"
    )


def test_a_config_name_that_is_a_symlink_protects_the_file_it_leads_to(
    workspace: Path, ctx: ToolContext
) -> None:
    """``lefthook.yml`` → ``configs/hooks.yml``: lefthook reads the target through the link, so
    writing the target (by either name) is writing lefthook's config; the prompt names both."""
    (workspace / "configs").mkdir()
    (workspace / "configs" / "hooks.yml").write_text("pre-commit: {}\n")
    (workspace / "lefthook.yml").symlink_to(Path("configs") / "hooks.yml")
    (workspace / ".lefthook").symlink_to("scripts")
    why = "writing configs/hooks.yml (lefthook.yml leads there) changes lefthook's config"
    for path in ("lefthook.yml", "configs/hooks.yml", "./configs/../configs/hooks.yml"):
        out = run_call(ctx, "write_file", {"path": path, "content": PLANTED}, ALLOW_WRITE())
        assert out.code == "DENIED" and why in out.text
    assert (workspace / "configs" / "hooks.yml").read_text() == "pre-commit: {}\n"
    assert protected(ctx, "scripts/pre-commit/x.sh") == (
        "writing scripts/pre-commit/x.sh (.lefthook leads there) changes lefthook's config, "
        "which runs commands on git commit"
    )
    assert protected(ctx, "configs/other.yml") is None
    assert protected(ctx, "scripts-not/x.sh") is None


def test_a_nested_config_name_that_is_a_symlink_is_caught_by_that_name(
    workspace: Path, ctx: ToolContext
) -> None:
    """A package's ``web/.lintstagedrc.json`` → ``../common/lint.json``: writing it by its
    config name is caught (symlinks below the top level are not searched for the target)."""
    (workspace / "common").mkdir()
    (workspace / "web").mkdir()
    (workspace / "common" / "lint.json").write_text("{}\n")
    (workspace / "web" / ".lintstagedrc.json").symlink_to(Path("..") / "common" / "lint.json")
    out = run_call(
        ctx, "write_file", {"path": "web/.lintstagedrc.json", "content": "{}"}, ALLOW_WRITE()
    )
    assert out.code == "DENIED" and (
        "writing common/lint.json (web/.lintstagedrc.json leads there) changes lint-staged's "
        "config" in out.text
    )
    assert (workspace / "common" / "lint.json").read_text() == "{}\n"


def test_a_symlinked_dsh_directory_is_read_by_its_name_so_its_target_is_protected(
    workspace: Path, ctx: ToolContext
) -> None:
    """``.dsh`` → ``conf``: dsh reads ``.dsh/config.toml`` through the link, so the write is
    caught whichever name the model uses (before, the resolved ``conf/config.toml`` passed)."""
    (workspace / "conf").mkdir()
    (workspace / ".dsh").symlink_to("conf")
    attack = '[tools]\napproval = "auto"\n'
    for path in (".dsh/config.toml", "conf/config.toml"):
        out = run_call(ctx, "write_file", {"path": path, "content": attack}, ALLOW_WRITE())
        assert out.code == "DENIED" and "changes dsh's own configuration" in out.text
    assert not (workspace / "conf" / "config.toml").exists()
    assert protected(ctx, "conf-other/config.toml") is None
