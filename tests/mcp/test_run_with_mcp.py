"""``dsh run`` and ``dsh mcp list`` as real processes, with the test server configured."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.test_run_cli import DSH, write_script
from tests.helpers import run_session_id
from tests.mcp.conftest import process_is_gone, started_pids, toml_server

ADD = {"name": "mcp__test__add", "arguments": {"a": 2, "b": 40}}


def dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=600
    )


def configure(env: dict[str, str], toml: str) -> None:
    home = Path(env["DSH_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(toml)


def events(env: dict[str, str], cwd: Path, session_id: str) -> list[dict]:
    shown = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=cwd)
    return [json.loads(line) for line in shown.stdout.splitlines()]


def results(log: list[dict]) -> list[tuple[str, bool, str | None]]:
    """Each tool result's text, whether it is an error, and its code."""
    out = []
    for event in log:
        if event["type"] == "tool/result":
            (block,) = event["data"]["message"]["content"]
            code = event["data"].get("error", {}).get("code")
            out.append((block["content"][0]["text"], block.get("isError", False), code))
    return out


def run(tmp_path: Path, env: dict[str, str], *flags: str, calls=(ADD,), steps=None):
    steps = steps or [{"toolCalls": list(calls)}]
    script = write_script(tmp_path / "s.json", [*steps, {"text": "done"}])
    done = dsh("run", "--script", str(script), *flags, "use the tool", env=env, cwd=tmp_path)
    session_id = run_session_id(done.stderr)
    return done, events(env, tmp_path, session_id)


def test_a_run_calls_an_mcp_tool_and_its_server_is_gone_after(tmp_path, env):
    pid_file = tmp_path / "server.pid"
    configure(env, toml_server("test", env={"MCP_TEST_PID_FILE": str(pid_file)}))
    done, log = run(tmp_path, env, "--allow", "mcp")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "done"
    assert results(log) == [("42", False, None)]
    (header,) = [e for e in log if e["type"] == "request/header"]
    offered = [tool["name"] for tool in header["data"]["header"]["tools"]]
    mcp = [name for name in offered if name.startswith("mcp__")]
    assert mcp == [f"mcp__test__{name}" for name in MCP_TOOLS]
    assert process_is_gone(int(pid_file.read_text()))


MCP_TOOLS = ["add", "fail", "slow", "image", "crash", "env"]


def test_a_server_that_crashes_in_a_run_is_restarted_and_no_run_of_it_outlives_dsh(tmp_path, env):
    starts = tmp_path / "starts"
    configure(env, toml_server("test", env={"MCP_TEST_STARTS_FILE": str(starts)}))
    crash = {"name": "mcp__test__crash", "arguments": {}}
    steps = [{"toolCalls": [crash]}, {"toolCalls": [ADD]}]
    done, log = run(tmp_path, env, "--allow", "mcp", steps=steps)
    assert done.returncode == 0, done.stderr
    (crashed, is_error, code), added = results(log)
    assert is_error and code == "MCP_ERROR" and "crashed during the call" in crashed
    assert added == ("42", False, None)
    warnings = [line for line in done.stderr.splitlines() if "MCP server test" in line]
    assert warnings == [
        "dsh: warning: MCP server test crashed (its program exited or closed its output) and "
        "was restarted (restart 1 of at most 3)"
    ]
    pids = started_pids(starts)
    assert len(pids) == 2 and all(process_is_gone(pid) for pid in pids)


def test_a_headless_run_asks_approval_for_mcp_tools(tmp_path, env):
    configure(env, toml_server("test"))
    done, log = run(tmp_path, env)
    assert done.returncode == 0, done.stderr
    ((text, is_error, code),) = results(log)
    assert is_error and code == "DENIED"
    assert "mcp__test__add was not run" in text and "--allow mcp" in text


def test_an_untrusted_project_s_server_is_ignored_with_a_warning(tmp_path, env):
    configure(env, "")
    (tmp_path / ".dsh").mkdir()
    (tmp_path / ".dsh" / "config.toml").write_text(toml_server("test"))
    done, log = run(tmp_path, env, "--yes")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "MCP server" in line]
    assert len(warnings) == 1
    assert "ignored MCP server test: an untrusted project may not start programs" in warnings[0]
    ((_, is_error, code),) = results(log)
    assert is_error and code == "UNKNOWN_TOOL"  # never offered, never started


def test_a_server_that_does_not_start_is_a_warning_and_the_run_goes_on(tmp_path, env):
    configure(env, '[mcp.servers.ghost]\ncommand = ["/nonexistent/mcp-server"]\n')
    script = write_script(tmp_path / "s.json", [{"text": "still here"}])
    done = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.splitlines()[0] == "still here"
    assert (
        "dsh: warning: MCP server ghost did not start: command not found: "
        "/nonexistent/mcp-server; the session runs without its tools"
    ) in done.stderr.splitlines()


def test_mcp_list_shows_each_server_and_the_names_the_model_sees(tmp_path, env):
    configure(
        env,
        toml_server("test")
        + '[mcp.servers.ghost]\ncommand = ["/nonexistent/mcp-server"]\n'
        + '[mcp.servers.off]\ncommand = ["x"]\nenabled = false\n',
    )
    listed = dsh("mcp", "list", env=env, cwd=tmp_path)
    assert listed.returncode == 1, listed.stderr  # ghost did not start: a check can see it
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("test: started, 6 tools (")
    assert lines[1].split() == ["mcp__test__add", "Add", "two", "integers."]
    assert [line.split()[0] for line in lines[1:7]] == [f"mcp__test__{n}" for n in MCP_TOOLS]
    assert lines[7] == (
        "ghost: did not start: command not found: /nonexistent/mcp-server (/nonexistent/mcp-server)"
    )
    assert lines[8] == "off: disabled (x)"


def test_mcp_list_exits_0_when_every_enabled_server_started(tmp_path, env):
    configure(env, toml_server("test") + '[mcp.servers.off]\ncommand = ["x"]\nenabled = false\n')
    listed = dsh("mcp", "list", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].startswith("test: started, 6 tools (")


def test_mcp_list_without_servers_says_where_to_add_one(tmp_path, env):
    listed = dsh("mcp", "list", env=env, cwd=tmp_path)
    assert listed.returncode == 0
    assert listed.stdout.startswith("no MCP servers configured (add [mcp.servers.NAME] to ")
