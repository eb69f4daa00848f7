"""Hostile tool arguments, as a careless or malicious model would send them.

Every call goes through ``ToolRegistry.execute`` (the one door from the model to a tool) with an
``auto`` policy, in a workspace beside a directory holding a secret file and symlinks that lead
out. Each call must come back as a ``ToolOutput`` (never an exception), nothing outside the
workspace may be read or changed, and a refusal names only the path the model gave — never where
it resolved (a symlink's target, ``~`` expanded, the workspace's own location). The generated
part is a hypothesis property test (rerunnable; ``HYPOTHESIS_PROFILE`` is not needed); the fixed
corpus is counted and printed with ``-s``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.registry import ToolRegistry, default_tools

SECRET = "top secret outside the workspace"
FILE_TOOLS = ("read_file", "write_file", "edit_file", "list_dir", "grep")
PATH_KEY = {"grep": "path"}

PATHS = [
    "../outside/secret.txt",
    "../../../../../../etc/passwd",
    "/etc/passwd",
    "~/.bashrc",
    "~root/.ssh/id_rsa",
    "link-out/secret.txt",
    "link-file",
    "link-dir/../secret.txt",
    "loop-a",
    "sub/../../outside/secret.txt",
    "./../outside",
    "sub/./../../outside/secret.txt",
    "%2e%2e/outside/secret.txt",
    "..\\outside\\secret.txt",
    "secret.txt\x00.png",
    "\x00",
    "",
    " ",
    "a" * 5000,
    "/" * 300,
    "sub/" * 200 + "x",
    "💥/../../outside/secret.txt",
    "\udcff",
    "/proc/self/environ",
    "/dev/zero",
    "-rf",
    "--help",
]


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path, ToolContext]:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (workspace / "sub").mkdir()
    (workspace / "inside.txt").write_text("inside\n")
    (workspace / "link-out").symlink_to(outside)
    (workspace / "link-file").symlink_to(outside / "secret.txt")
    (workspace / "link-dir").symlink_to(outside)
    (workspace / "loop-a").symlink_to(workspace / "loop-b")
    (workspace / "loop-b").symlink_to(workspace / "loop-a")
    ctx = ToolContext(workspace=workspace.resolve(), session_id="s", call_id="c")
    return workspace, outside, ctx


def call_args(tool: str, path: str) -> dict[str, Any]:
    if tool == "read_file":
        return {"path": path}
    if tool == "write_file":
        return {"path": path, "content": "pwned"}
    if tool == "edit_file":
        return {"path": path, "old": "top", "new": "pwned"}
    if tool == "list_dir":
        return {"path": path}
    return {"pattern": "secret", "path": path}


def run(registry: ToolRegistry, ctx: ToolContext, name: str, arguments: str) -> ToolOutput:
    return asyncio.run(registry.execute("c", name, arguments, ctx, ApprovalPolicy("auto")))


def outside_untouched(outside: Path) -> bool:
    return (
        sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
        and (outside / "secret.txt").read_text() == SECRET
    )


def check(output: ToolOutput, outside: Path, path: str) -> str:
    """Classify one answer, asserting the invariants."""
    assert isinstance(output, ToolOutput)
    assert SECRET not in output.text
    assert str(outside) not in output.text and str(outside.resolve()) not in output.text
    assert outside_untouched(outside)
    if output.code == "OUTSIDE_WORKSPACE":
        assert repr(path) in output.text or json.dumps(path) in output.text
        assert str(Path.home()) not in output.text or path.startswith(str(Path.home()))
        return "refused-outside"
    return "error" if output.is_error else "ok"


def test_the_fixed_corpus_never_escapes_and_refusals_name_only_the_given_path(world) -> None:
    _, outside, ctx = world
    registry = ToolRegistry(default_tools())
    counts: dict[str, int] = {}
    for tool in FILE_TOOLS:
        for path in PATHS:
            arguments = json.dumps(call_args(tool, path))
            kind = check(run(registry, ctx, tool, arguments), outside, path)
            counts[kind] = counts.get(kind, 0) + 1
    for pattern in ("../outside/*", "/etc/*", "~/*", "link-out/*", "**/../../*", "link-dir/**"):
        output = run(registry, ctx, "glob", json.dumps({"pattern": pattern}))
        kind = check(output, outside, pattern)
        counts[kind] = counts.get(kind, 0) + 1
    print(f"hostile file-tool calls: {sum(counts.values())}; outcomes {sorted(counts.items())}")
    assert counts["refused-outside"] >= 5 * 10  # every tool refuses the plain escapes


def test_a_refusal_does_not_reveal_a_symlink_target_or_the_expanded_home(world) -> None:
    workspace, outside, ctx = world
    registry = ToolRegistry(default_tools())
    through_link = run(registry, ctx, "read_file", json.dumps({"path": "link-file"}))
    assert through_link.code == "OUTSIDE_WORKSPACE"
    assert "'link-file'" in through_link.text and str(outside) not in through_link.text
    assert str(workspace) not in through_link.text
    home = run(registry, ctx, "read_file", json.dumps({"path": "~/.bashrc"}))
    assert "'~/.bashrc'" in home.text and str(Path.home()) + "/" not in home.text


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from([*FILE_TOOLS, "glob", "todo_write", "nope", ""]),
    payload=st.one_of(
        st.text(max_size=200),  # raw, probably not JSON at all
        st.dictionaries(
            st.sampled_from(["path", "content", "old", "new", "pattern", "offset", "limit", "x"]),
            JSONISH | st.sampled_from(PATHS),
            max_size=5,
        ).map(json.dumps),
        JSONISH.map(lambda v: json.dumps(v, allow_nan=True)),
    ),
)
def test_generated_arguments_always_come_back_as_a_tool_output(world, name, payload) -> None:
    _, outside, ctx = world
    registry = ToolRegistry([t for t in default_tools() if t.name != "bash"])
    output = run(registry, ctx, name, payload)
    assert isinstance(output, ToolOutput) and output.code != "TOOL_FAILED", output.text
    assert SECRET not in output.text and outside_untouched(outside)
