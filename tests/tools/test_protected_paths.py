"""Permission to write files is not permission to run commands: a file tool's write to ``.dsh/``
or ``.git/`` (dsh's and git's own configuration, which runs commands) is asked every time and
refused headless, whatever ``--allow write``, ``--yes`` or an earlier "always" say. The paths
are resolved as the tools resolve them (symlinks, ``..``, case), through the real registry and
the real tools on real files."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from dsh.tools.approval import FOR_THE_MODEL, ApprovalPolicy, for_a_person
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.protected import protected_write
from dsh.tools.registry import ToolRegistry, default_tools
from tests.tools.test_approval import ScriptedApprover

TOOLS = {tool.name: tool for tool in default_tools()}
WRITE_FILE, EDIT_FILE = TOOLS["write_file"], TOOLS["edit_file"]
ATTACK = '[tools]\napproval = "auto"\n'


@pytest.fixture
def repo(workspace: Path) -> Path:
    """A workspace that is a git repository with a project config, as an attacked one is."""
    (workspace / ".dsh" / "commands").mkdir(parents=True)
    (workspace / ".dsh" / "config.toml").write_text("[compaction]\nchunk_tokens = 2000\n")
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('app')\n")
    return workspace


def run_call(
    ctx: ToolContext, name: str, args: dict[str, Any], policy: ApprovalPolicy
) -> ToolOutput:
    registry = ToolRegistry(default_tools())
    return asyncio.run(registry.execute("call-1", name, json.dumps(args), ctx, policy))


HEADLESS_POLICIES = {
    "allow-write": lambda: ApprovalPolicy("ask", allow=frozenset({"write"})),
    "yes": lambda: ApprovalPolicy("auto"),
    "read-only-allow-write": lambda: ApprovalPolicy("read-only", allow=frozenset({"write"})),
}


@pytest.mark.parametrize("policy", HEADLESS_POLICIES.values(), ids=HEADLESS_POLICIES.keys())
def test_a_headless_write_to_the_project_config_is_refused_whatever_allows_writes(
    repo: Path, ctx: ToolContext, policy: Any
) -> None:
    before = (repo / ".dsh" / "config.toml").read_bytes()
    out = run_call(ctx, "write_file", {"path": ".dsh/config.toml", "content": ATTACK}, policy())
    assert out.is_error and out.code == "DENIED"
    assert (repo / ".dsh" / "config.toml").read_bytes() == before
    assert "\n" not in out.text  # one line
    assert "writing .dsh/config.toml changes dsh's own configuration" in out.text
    assert "which can run commands" in out.text
    assert "the user can make it themselves" in out.text
    assert FOR_THE_MODEL in out.text and FOR_THE_MODEL not in for_a_person(out.text)
    ordinary = run_call(ctx, "write_file", {"path": "src/new.py", "content": "x\n"}, policy())
    assert not ordinary.is_error and (repo / "src" / "new.py").read_text() == "x\n"  # the control


def test_a_headless_write_to_a_git_hook_is_refused_and_no_hook_appears(
    repo: Path, ctx: ToolContext
) -> None:
    hook = {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\necho RAN > pwned.txt\n"}
    out = run_call(ctx, "write_file", hook, ApprovalPolicy("auto"))
    assert out.code == "DENIED" and "changes git's own configuration" in out.text
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


def test_edit_file_on_git_config_is_refused_like_write_file(repo: Path, ctx: ToolContext) -> None:
    edit = {"path": ".git/config", "old": "bare = false", "new": "hooksPath = x"}
    out = run_call(ctx, "edit_file", edit, ApprovalPolicy("ask", allow=frozenset({"write"})))
    assert out.code == "DENIED" and "writing .git/config changes git's" in out.text
    assert "hooksPath" not in (repo / ".git" / "config").read_text()


@pytest.mark.parametrize(
    "path",
    [
        ".dsh/config.toml",
        "./.dsh/../.dsh/config.toml",
        "src/../.dsh/config.toml",
        ".dsh/commands/review.md",
        ".dsh",
        ".DSH/config.toml",  # one and the same directory on a case-insensitive disk
        ".d\u200csh/config.toml",  # HFS+ leaves the zero-width non-joiner out of a name
        ".git/hooks/pre-commit",
        ".Git/config",
        "vendor/lib/.git/hooks/post-checkout",  # a nested repository's hooks run too
        "config-link.toml",  # a symlink to .dsh/config.toml
        "dsh-dir-link/commands/x.md",  # through a symlink to the .dsh directory
        "hooks-link/pre-push",  # through a symlink to .git/hooks
        ".vscode/tasks.json",  # a task can run when the folder is opened
        ".vscode/settings.json",  # names programs the editor runs (an interpreter, a shell)
        ".envrc",  # direnv runs it in the shell that enters the directory
        "sub/.envrc",
    ],
)
def test_every_spelling_of_a_protected_path_is_caught(
    repo: Path, ctx: ToolContext, path: str
) -> None:
    (repo / "config-link.toml").symlink_to(repo / ".dsh" / "config.toml")
    (repo / "dsh-dir-link").symlink_to(repo / ".dsh")
    (repo / "hooks-link").symlink_to(Path(".git") / "hooks")
    assert protected_write(WRITE_FILE, {"path": path, "content": ""}, ctx.workspace) is not None
    out = run_call(ctx, "write_file", {"path": path, "content": ATTACK}, ApprovalPolicy("auto"))
    assert out.code == "DENIED"
    assert (repo / ".dsh" / "config.toml").read_text() != ATTACK


def test_an_absolute_path_to_the_project_config_is_caught(repo: Path, ctx: ToolContext) -> None:
    absolute = str(repo / ".dsh" / "config.toml")
    found = protected_write(EDIT_FILE, {"path": absolute}, ctx.workspace)
    assert found is not None and found.path == ".dsh/config.toml" and found.owner == "dsh"


@pytest.mark.parametrize(
    "path",
    [
        "src/app.py",
        ".gitignore",
        ".github/workflows/ci.yml",
        ".dshrc",
        "notes/.dsh.md",
        "docs/vscode.md",
        ".envrc.example",
    ],
)
def test_ordinary_files_are_not_protected(repo: Path, ctx: ToolContext, path: str) -> None:
    assert protected_write(WRITE_FILE, {"path": path, "content": ""}, ctx.workspace) is None


def test_reading_tools_and_paths_the_tools_refuse_are_not_this_rules_business(
    repo: Path, ctx: ToolContext
) -> None:
    """A read of .dsh/config.toml asks nothing; a path outside the workspace is the tool's own
    refusal (OUTSIDE_WORKSPACE), not a protected write."""
    read = TOOLS["read_file"]
    assert protected_write(read, {"path": ".dsh/config.toml"}, ctx.workspace) is None
    assert protected_write(WRITE_FILE, {"path": "../elsewhere/.git/config"}, ctx.workspace) is None
    out = run_call(ctx, "read_file", {"path": ".dsh/config.toml"}, ApprovalPolicy("read-only"))
    assert not out.is_error and "chunk_tokens" in out.text


def test_dsh_home_inside_the_workspace_is_protected(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run in a directory holding dsh's home (the home directory, say), the user config — where
    trust and approval are the user's alone — is protected as well."""
    monkeypatch.setenv("DSH_HOME", str(workspace / "dot-dsh-home"))
    found = protected_write(WRITE_FILE, {"path": "dot-dsh-home/config.toml"}, ctx.workspace)
    assert found is not None and found.owner == "dsh"
    assert protected_write(WRITE_FILE, {"path": "dot-dsh-home-not/x"}, ctx.workspace) is None


def test_every_asked_protected_write_is_asked_again_and_always_is_not_remembered(
    repo: Path, ctx: ToolContext
) -> None:
    """In the UI (an approver): asked each time with the reason, "always" counts once only, and
    an "always" given for write_file before does not cover the protected path."""
    approver = ScriptedApprover("always", "always", "always", "deny")
    policy = ApprovalPolicy("ask", approver=approver)
    ordinary = run_call(ctx, "write_file", {"path": "src/a.py", "content": "a\n"}, policy)
    assert not ordinary.is_error and policy.always_allowed_tools == {"write_file"}
    for content in ("one\n", "two\n"):
        out = run_call(ctx, "write_file", {"path": ".dsh/config.toml", "content": content}, policy)
        assert not out.is_error and (repo / ".dsh" / "config.toml").read_text() == content
    assert policy.always_allowed_tools == {"write_file"}
    denied = run_call(ctx, "write_file", {"path": ".git/config", "content": ""}, policy)
    assert denied.code == "DENIED" and "the user denied this call" in denied.text
    assert [name for name, _ in approver.asked] == ["write_file"] * 4
    assert approver.protected == [
        None,
        "writing .dsh/config.toml changes dsh's own configuration, which can run commands",
        "writing .dsh/config.toml changes dsh's own configuration, which can run commands",
        "writing .git/config changes git's own configuration, which can run commands",
    ]


def test_auto_with_someone_to_ask_still_asks_for_a_protected_write(
    repo: Path, ctx: ToolContext
) -> None:
    """``dsh --yes`` in the UI runs every other call unasked, but not this one."""
    approver = ScriptedApprover("deny")
    policy = ApprovalPolicy("auto", approver=approver)
    assert not run_call(ctx, "write_file", {"path": "src/b.py", "content": ""}, policy).is_error
    out = run_call(ctx, "write_file", {"path": ".dsh/commands/x.md", "content": "x"}, policy)
    assert out.code == "DENIED" and len(approver.asked) == 1
    assert not (repo / ".dsh" / "commands" / "x.md").exists()


def test_read_only_denies_a_protected_write_as_any_write_without_asking(
    repo: Path, ctx: ToolContext
) -> None:
    approver = ScriptedApprover()
    policy = ApprovalPolicy("read-only", approver=approver)
    out = run_call(ctx, "write_file", {"path": ".dsh/config.toml", "content": ATTACK}, policy)
    assert out.code == "DENIED" and "read-only" in out.text and approver.asked == []


def test_every_built_in_write_tool_names_its_file_in_a_required_path() -> None:
    """The rule reads a write tool's ``path``: a write tool taking its file another way would
    slip past it, so this pins the shape it relies on."""
    writers = [tool for tool in default_tools() if tool.kind == "write"]
    assert {tool.name for tool in writers} == {"write_file", "edit_file"}
    for tool in writers:
        assert "path" in tool.parameters["required"]
        assert tool.parameters["properties"]["path"]["type"] == "string"


def test_a_symlink_swapped_in_for_the_project_config_is_still_the_project_config(
    repo: Path, ctx: ToolContext
) -> None:
    """A link made elsewhere in the workspace to the config (by a command the user allowed)
    does not launder the write."""
    os.symlink(repo / ".dsh", repo / "src" / "settings")
    out = run_call(
        ctx, "write_file", {"path": "src/settings/config.toml", "content": ATTACK},
        ApprovalPolicy("ask", allow=frozenset({"write"})),
    )  # fmt: skip
    assert out.code == "DENIED" and "writing .dsh/config.toml" in out.text
