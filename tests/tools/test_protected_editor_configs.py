"""Editor and environment configuration that runs commands is protected as ``.vscode/`` and
``.envrc`` are: a VS Code ``*.code-workspace`` file (its tasks run on folder open, as
``.vscode/tasks.json``'s do), the Dev Containers configuration (``initializeCommand`` runs on
the host), and mise's configuration (its hooks and ``env`` run on entering the directory, as
direnv's ``.envrc`` does; ``.tool-versions`` can put a workspace directory on ``PATH``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext
from dsh.tools.protected import protected_write
from tests.tools.test_protected_paths import HEADLESS_POLICIES, WRITE_FILE, run_call

VSCODE = (
    "VS Code's workspace configuration, whose tasks and settings can run commands when the "
    "folder is opened"
)
DEV_CONTAINER = (
    "the dev container's configuration, whose initializeCommand runs on your machine when the "
    "container is built"
)
MISE = (
    "mise's configuration, whose hooks, environment and tool paths your shell's mise applies on "
    "entering the directory"
)
FOLDER_OPEN_TASK = (
    '{"folders": [{"path": "."}], "tasks": {"version": "2.0.0", "tasks": [{"label": "x", '
    '"command": "touch RAN", "runOptions": {"runOn": "folderOpen"}}]}}\n'
)


@pytest.mark.parametrize(
    ("path", "what"),
    [
        ("proj.code-workspace", VSCODE),
        ("sub/Team.Code-Workspace", VSCODE),
        (".devcontainer/devcontainer.json", DEV_CONTAINER),
        (".devcontainer/python/devcontainer.json", DEV_CONTAINER),
        (".devcontainer/Dockerfile", DEV_CONTAINER),
        (".devcontainer.json", DEV_CONTAINER),
        ("mise.toml", MISE),
        (".mise.toml", MISE),
        ("mise.local.toml", MISE),
        ("mise.production.toml", MISE),
        ("sub/.mise.local.toml", MISE),
        (".mise/config.toml", MISE),
        (".config/mise/config.toml", MISE),
        (".config/mise/conf.d/hooks.toml", MISE),
        (".config/mise.toml", MISE),
        ("mise/config.toml", MISE),
        ("mise/config.local.toml", MISE),
        (".rtx.toml", MISE),
        (".tool-versions", MISE),
    ],
)
def test_editor_and_environment_configs_that_run_commands_are_protected(
    ctx: ToolContext, path: str, what: str
) -> None:
    found = protected_write(WRITE_FILE, {"path": path, "content": ""}, ctx.workspace)
    assert found is not None and found.why == f"writing {path} changes {what}"


@pytest.mark.parametrize(
    "path",
    [
        "docs/code-workspace.md",
        "devcontainer.json",  # not where Dev Containers looks
        "docs/devcontainer.md",
        "premise.toml",
        "docs/mise.md",
        "mise/tasks/build",  # a task runs when you run it, as a Makefile's target does
        "mise/README.md",
        ".config/misc/config.toml",
        ".tool-versions.example",
    ],
)
def test_files_named_alike_are_not_protected(ctx: ToolContext, path: str) -> None:
    assert protected_write(WRITE_FILE, {"path": path, "content": ""}, ctx.workspace) is None


@pytest.mark.parametrize("policy", HEADLESS_POLICIES.values(), ids=HEADLESS_POLICIES.keys())
def test_a_headless_write_of_a_workspace_file_or_devcontainer_is_refused(
    workspace: Path, ctx: ToolContext, policy: object
) -> None:
    """The audit's repro: both written with ``--allow write`` while ``.envrc`` was refused."""
    for path, content in (
        ("proj.code-workspace", FOLDER_OPEN_TASK),
        (".devcontainer/devcontainer.json", '{"initializeCommand": "touch RAN"}\n'),
        ("mise.toml", '[hooks]\nenter = "touch RAN"\n'),
    ):
        out = run_call(ctx, "write_file", {"path": path, "content": content}, policy())
        assert out.code == "DENIED" and "\n" not in out.text, path
        assert not (workspace / path).exists()


def test_a_top_level_symlink_named_as_a_workspace_file_protects_what_it_leads_to(
    workspace: Path, ctx: ToolContext
) -> None:
    (workspace / "configs").mkdir()
    (workspace / "configs" / "ws.json").write_text("{}\n")
    (workspace / "team.code-workspace").symlink_to("configs/ws.json")
    found = protected_write(WRITE_FILE, {"path": "configs/ws.json"}, ctx.workspace)
    assert found is not None and found.path == "configs/ws.json (team.code-workspace leads there)"
    out = run_call(ctx, "write_file", {"path": "configs/ws.json", "content": FOLDER_OPEN_TASK},
                   ApprovalPolicy("auto"))  # fmt: skip
    assert out.code == "DENIED"
