"""MCP tools inside a session: built by ``build_agent``, approved by kind, cancelled with the
turn, validated like any tool; and no SDK import for a session without a server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.runtime import Route
from dsh.agent.wiring import build_agent, build_parts
from dsh.config import McpServerSettings, McpSettings, Settings
from dsh.events import ToolResultEvent
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.args import validate_args
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.mcp.tool import McpTool, RemoteTool
from dsh.tools.registry import ToolRegistry
from tests.cli.test_run_cli import write_script
from tests.mcp.conftest import server

CTX = ToolContext(workspace=Path("/"), session_id="s", call_id="c")


def fake_tool(schema: dict[str, Any], calls: list[dict[str, Any]]) -> McpTool:
    async def call(server: str, tool: str, args: dict[str, Any], timeout: float) -> ToolOutput:
        calls.append(args)
        return ToolOutput("ran")

    remote = RemoteTool("lookup", "Look it up.", schema)
    return McpTool(name="mcp__docs__lookup", server="docs", remote=remote, timeout_s=5, call=call)


def test_an_mcp_tool_is_cancelled_with_its_turn(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    started = tmp_path / "slow-started"
    settings = Settings(
        mcp=McpSettings(servers={"test": server(env={"MCP_TEST_SLOW_FILE": str(started)})})
    )
    script = [{"toolCalls": [{"name": "mcp__test__slow", "arguments": {"seconds": 600}}]}]
    provider = ScriptedProvider(parse_script(script), model="scripted")
    session = Session.create(JsonlStore(tmp_path / "home"), cwd=workspace)
    agent = build_agent(
        session,
        settings,
        Route(provider, "scripted", 128_000),
        workspace=workspace,
        policy=ApprovalPolicy("auto"),
    )

    async def scenario() -> Any:
        turn = asyncio.create_task(agent.run_turn("wait for it"))
        while not started.exists():  # the server is inside the call
            await asyncio.sleep(0.05)
        agent.cancel()
        return await turn

    result = asyncio.run(scenario())  # returns: the 600 s call did not hold the turn
    assert result.reason == "aborted"
    (answer,) = session.of_type(ToolResultEvent)
    assert answer.data.error is not None and answer.data.error.code == "CANCELLED"
    session.close()


def test_parts_without_mcp_start_no_server(tmp_path: Path, caplog) -> None:
    """``/compact`` builds parts for the engine alone: no tool runs, so no server starts."""
    ghost = McpServerSettings(command=["/nonexistent/mcp-server"])
    settings = Settings(mcp=McpSettings(servers={"ghost": ghost}))
    route = Route(ScriptedProvider(parse_script([]), model="scripted"), "scripted", 8000)
    session = Session.create(JsonlStore(tmp_path / "home"), cwd=tmp_path)
    with caplog.at_level("WARNING", logger="dsh"):
        parts = build_parts(settings, route, session, mcp=False)
        assert not [n for n in parts.tools.names if n.startswith("mcp__")]
        assert not caplog.records
        build_parts(settings, route, session)
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith("MCP server ghost did not start: command not found")
    session.close()


def ask(policy: ApprovalPolicy, tool: McpTool) -> tuple[bool, str]:
    decision = asyncio.run(policy.decide(tool, {"q": "x"}, CTX))
    return decision.allowed, decision.reason


def test_mcp_tools_need_approval_unless_auto_or_allowed() -> None:
    tool = fake_tool({"type": "object"}, [])
    allowed, reason = ask(ApprovalPolicy("ask"), tool)
    assert not allowed and "rerun with --allow mcp or --yes" in reason
    allowed, reason = ask(ApprovalPolicy("read-only"), tool)
    assert not allowed and "--allow mcp" in reason
    assert ask(ApprovalPolicy("ask", allow=frozenset({"mcp"})), tool)[0]
    assert ask(ApprovalPolicy("auto"), tool)[0]
    assert not ask(ApprovalPolicy("ask", allow=frozenset({"shell", "write"})), tool)[0]


def test_the_faces_approver_is_asked_for_an_mcp_call_and_always_is_kept() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def approver(name: str, args: dict[str, Any], protected: str | None) -> Any:
        asked.append((name, args))
        return "always"

    policy = ApprovalPolicy("ask", approver=approver)
    tool = fake_tool({"type": "object"}, [])
    assert ask(policy, tool)[0] and ask(policy, tool)[0]
    assert asked == [("mcp__docs__lookup", {"q": "x"})]  # asked once, by the exposed name


def test_arguments_are_checked_against_the_server_s_schema_before_a_call() -> None:
    calls: list[dict[str, Any]] = []
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "filters": {"type": "object"}},
        "required": ["q"],
    }
    registry = ToolRegistry([fake_tool(schema, calls)])
    policy = ApprovalPolicy("auto")

    def execute(arguments: str) -> ToolOutput:
        return asyncio.run(registry.execute("c", "mcp__docs__lookup", arguments, CTX, policy))

    refused = execute('{"q": 3}')
    assert refused.code == "INVALID_ARGUMENT" and calls == []
    assert execute('{"q": "x", "filters": {"lang": "py", "since": 2020}}').text == "ran"
    assert calls == [{"q": "x", "filters": {"lang": "py", "since": 2020}}]  # a free-form object


def test_additional_properties_is_honoured() -> None:
    typed = {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}
    validate_args({"a": "x"}, typed)
    with pytest.raises(Exception, match="a must be a string"):
        validate_args({"a": 1}, typed)
    closed = {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
    with pytest.raises(Exception, match="unknown argument 'b'"):
        validate_args({"a": 1, "b": 2}, closed)
    validate_args({"a": 1, "b": 2}, {**closed, "additionalProperties": True})


def test_a_run_without_mcp_servers_never_imports_the_sdk(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('SDK', 'mcp' in sys.modules, file=sys.stderr))\n"
        "from dsh.cli.main import main\n"
        f"sys.argv = ['dsh', 'run', '--script', {str(script)!r}, 'hello']\n"
        "main()\n"
    )
    env = {"DSH_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.stdout.startswith("hi\n"), done.stderr
    assert done.stderr.strip().splitlines()[-1] == "SDK False"
