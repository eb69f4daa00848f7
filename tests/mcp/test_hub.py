"""The hub against a real MCP server (``mcp_test_server.py``): listing, calls, every failure."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.config import McpServerSettings
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.mcp.hub import McpHub
from dsh.tools.mcp.tool import MAX_DESCRIPTION_CHARS, McpTool, RemoteTool, object_schema
from dsh.tools.secrets import SecretPolicy
from tests.mcp.conftest import process_is_gone, server


def started_hub(tmp_path: Path, environ: dict[str, str] | None = None, **servers) -> McpHub:
    secrets = SecretPolicy.from_environment(environ or {})
    hub = McpHub(servers, workspace=tmp_path, secrets=secrets, environ=environ or {})
    hub.start()
    return hub


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpHub]:
    """One server for the tests that leave it running as it was."""
    where = tmp_path_factory.mktemp("mcp")
    environ = {"PATH": "/usr/bin:/bin", "CORP_API_KEY": "sk-do-not-pass-me-on"}
    test = server(env={"OWN_SETTING": "from the config"}, timeout_s=2.0)
    started = started_hub(where, environ, test=test)
    yield started
    started.close()


def tool(hub: McpHub, name: str) -> McpTool:
    found = next(t for t in hub.tools if t.name == name)
    assert isinstance(found, McpTool)
    return found


def call(hub: McpHub, name: str, args: dict) -> ToolOutput:
    ctx = ToolContext(workspace=Path("/"), session_id="s", call_id="c")
    return asyncio.run(tool(hub, name).run(args, ctx))


def test_a_server_s_tools_are_listed_under_their_exposed_names(hub):
    (status,) = hub.statuses
    assert status.started and status.error is None
    assert [name for name, _ in status.tools] == [
        "mcp__test__add",
        "mcp__test__fail",
        "mcp__test__slow",
        "mcp__test__image",
        "mcp__test__crash",
        "mcp__test__env",
    ]
    add = tool(hub, "mcp__test__add")
    assert add.kind == "mcp" and add.description == "Add two integers."
    assert add.parameters["type"] == "object" and add.parameters["required"] == ["a", "b"]


def test_a_call_returns_the_text_and_an_image_is_a_placeholder(hub):
    assert call(hub, "mcp__test__add", {"a": 2, "b": 40}) == ToolOutput("42")
    image = call(hub, "mcp__test__image", {})
    assert not image.is_error
    assert image.text == "a red dot\n\n[image omitted: image/png, 66 bytes]"


def test_a_tool_error_is_an_error_output(hub):
    out = call(hub, "mcp__test__fail", {"reason": "no luck"})
    assert out.is_error and out.code == "MCP_TOOL_ERROR" and "no luck" in out.text


def test_a_call_past_its_timeout_is_a_timeout_error_and_the_server_goes_on(hub):
    out = call(hub, "mcp__test__slow", {"seconds": 600})  # timeout_s is 2
    assert out.is_error and out.code == "TIMEOUT"
    assert "timed out after 2 s" in out.text and "MCP server test" in out.text
    assert call(hub, "mcp__test__add", {"a": 1, "b": 1}).text == "2"


def test_the_server_gets_the_scrubbed_environment_and_its_own_table(hub):
    assert call(hub, "mcp__test__env", {"name": "CORP_API_KEY"}).text == "(unset)"
    assert call(hub, "mcp__test__env", {"name": "OWN_SETTING"}).text == "from the config"
    assert call(hub, "mcp__test__env", {"name": "PATH"}).text == "/usr/bin:/bin"


def test_cancelling_a_call_cancels_it_on_the_hub(tmp_path):
    started = tmp_path / "slow-started"
    hub = started_hub(tmp_path, test=server(env={"MCP_TEST_SLOW_FILE": str(started)}))
    slow, add = tool(hub, "mcp__test__slow"), tool(hub, "mcp__test__add")
    ctx = ToolContext(workspace=tmp_path, session_id="s", call_id="c")

    async def scenario() -> ToolOutput:
        running = asyncio.create_task(slow.run({"seconds": 600}, ctx))
        while not started.exists():  # the server is inside the call
            await asyncio.sleep(0.05)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        return await add.run({"a": 3, "b": 4}, ctx)

    try:
        assert asyncio.run(scenario()).text == "7"  # the hub and the server still answer
    finally:
        hub.close()


def test_servers_that_do_not_start_say_why_and_the_others_run(tmp_path):
    never_answers = [sys.executable, "-c", "import time; time.sleep(600)"]
    hub = started_hub(
        tmp_path,
        missing=McpServerSettings(command=["/nonexistent/mcp-server"]),
        crashing=server("--crash-at-start"),
        nowhere=server(cwd="does/not/exist"),
        silent=McpServerSettings(command=never_answers, startup_timeout_s=1.0),
        test=server(),
    )
    try:
        statuses = {s.name: s for s in hub.statuses}
        assert statuses["missing"].error == "command not found: /nonexistent/mcp-server"
        crashing = statuses["crashing"].error or ""
        assert "this server crashes at start" in crashing  # its stderr's last line
        assert statuses["silent"].error == "no answer to the MCP handshake within 1 s"
        missing_dir = tmp_path / "does" / "not" / "exist"
        assert statuses["nowhere"].error == f"its working directory does not exist: {missing_dir}"
        assert statuses["test"].started
        assert {t.name.split("__")[1] for t in hub.tools} == {"test"}
    finally:
        hub.close()


def test_closing_the_hub_ends_the_server_process(tmp_path):
    pid_file = tmp_path / "pid"
    hub = started_hub(tmp_path, test=server(env={"MCP_TEST_PID_FILE": str(pid_file)}))
    pid = int(pid_file.read_text())
    assert not process_is_gone(pid)
    hub.close()
    assert process_is_gone(pid)
    out = call(hub, "mcp__test__add", {"a": 1, "b": 2})
    assert out.is_error and "dsh closed it" in out.text


def test_what_the_model_is_shown_is_capped_and_an_object_schema():
    remote = RemoteTool("t", "d" * 5000, {"type": "string"})
    made = McpTool(name="mcp__s__t", server="s", remote=remote, timeout_s=1, call=None)  # type: ignore[arg-type]
    assert len(made.description) == MAX_DESCRIPTION_CHARS and made.description.endswith("…")
    assert made.parameters == {"type": "object", "properties": {}}
    assert object_schema({"properties": {"x": {"type": "integer"}}}) == {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
    }
    assert object_schema("not a schema") == {"type": "object", "properties": {}}
