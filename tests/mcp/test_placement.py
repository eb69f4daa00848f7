"""Where an MCP server runs and what it is told of the workspace (``placement.py``): the user's
servers run outside the workspace, so opening dsh in a cloned repository runs none of its code."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from dsh.config import McpServerSettings, load_settings, set_trust
from dsh.tools.mcp.hub import McpHub
from dsh.tools.secrets import SecretPolicy
from tests.cli.test_run_cli import write_script
from tests.helpers import run_session_id
from tests.mcp.conftest import SERVER, server, toml_server
from tests.mcp.test_run_with_mcp import configure, dsh


def where(path: Path) -> dict[str, object]:
    recorded: dict[str, object] = json.loads(path.read_text())
    return recorded


def repository(tmp_path: Path) -> Path:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    return workspace.resolve()


def test_a_user_server_runs_in_dsh_s_own_directory_and_is_told_the_workspace(tmp_path, env):
    workspace = repository(tmp_path)
    told = {"MCP_TEST_WHERE_FILE": "{workspace}/where.json"}  # {workspace} in an env value
    configure(env, toml_server("test", "--root", "{workspace}", env=told))
    listed = dsh("mcp", "list", env=env, cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    own = (Path(env["DSH_HOME"]) / "mcp").resolve()
    assert where(workspace / "where.json") == {
        "cwd": str(own),  # not the workspace, nor anywhere in it
        "argv": ["--root", str(workspace)],
        "workspace": str(workspace),
        "pwd": str(own),
    }


def test_a_module_a_repository_plants_is_not_what_python_m_runs(tmp_path, env):
    workspace = repository(tmp_path)
    planted = tmp_path / "PLANTED_RAN"
    (workspace / "mcp_server_x.py").write_text(f"open({str(planted)!r}, 'w').write('ran')\n")
    installed = tmp_path / "lib"  # where the user's real server module lives
    installed.mkdir()
    (installed / "mcp_server_x.py").write_text(
        f"import runpy\nrunpy.run_path({str(SERVER)!r}, run_name='__main__')\n"
    )
    configure(
        env,
        toml_server("x", env={"PYTHONPATH": str(installed)}).replace(
            json.dumps([sys.executable, str(SERVER)]),
            json.dumps([sys.executable, "-m", "mcp_server_x"]),
        ),
    )
    add = {"name": "mcp__x__add", "arguments": {"a": 2, "b": 40}}
    script = write_script(tmp_path / "s.json", [{"toolCalls": [add]}, {"text": "done"}])
    done = dsh("run", "--script", str(script), "--allow", "mcp", "add", env=env, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert not planted.exists()  # the repository's file never ran
    assert "MCP server" not in done.stderr  # the user's server started, from its own place
    session_id = run_session_id(done.stderr)
    shown = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=workspace)
    assert '"text": "42"' in shown.stdout or '"text":"42"' in shown.stdout


def test_a_trusted_project_s_own_server_runs_in_the_project(tmp_path, env):
    workspace = repository(tmp_path)
    configure(env, "")
    (workspace / ".dsh").mkdir()
    told = {"MCP_TEST_WHERE_FILE": str(tmp_path / "where.json")}
    (workspace / ".dsh" / "config.toml").write_text(toml_server("own", env=told))
    set_trust(workspace, True, env)
    listed = dsh("mcp", "list", env=env, cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    assert where(tmp_path / "where.json")["cwd"] == str(workspace)


def test_only_a_trusted_project_s_servers_default_to_its_directory(tmp_path, env):
    workspace = repository(tmp_path)
    user = '[mcp.servers.docs]\ncommand = ["docs-server"]\n'
    configure(env, user)
    (workspace / ".dsh").mkdir()
    project = workspace / ".dsh" / "config.toml"
    project.write_text(user)  # untrusted, the same as the user's: kept, the user's own
    assert load_settings(environ=env, cwd=workspace).mcp.servers["docs"].cwd is None
    project.write_text(
        user + '[mcp.servers.lint]\ncommand = ["lint"]\n[mcp.servers.set]\n'
        'command = ["x"]\ncwd = "tools"\n'
    )
    set_trust(workspace, True, env)
    servers = load_settings(environ=env, cwd=workspace).mcp.servers
    assert servers["docs"].cwd == servers["lint"].cwd == str(workspace)  # the project's
    assert servers["set"].cwd == "tools"  # set: kept as it is (from the workspace)


def test_cwd_dot_is_the_workspace_when_the_user_chooses_it(tmp_path):
    workspace = repository(tmp_path)
    recorded = tmp_path / "where.json"
    chosen = server(cwd=".", env={"MCP_TEST_WHERE_FILE": str(recorded)})
    hub = McpHub({"test": chosen}, workspace=workspace, secrets=SecretPolicy(), environ={})
    try:
        hub.start()
        assert hub.statuses[0].started, hub.statuses[0].error
    finally:
        hub.close()
    recorded_where = where(recorded)
    assert recorded_where["cwd"] == recorded_where["pwd"] == str(workspace)
    assert recorded_where["workspace"] == str(workspace)


def test_a_relative_path_argument_without_cwd_is_one_warning(tmp_path, caplog):
    workspace = repository(tmp_path)
    servers = {
        "fs": McpServerSettings(command=["npx", "-y", "server-filesystem", "."]),
        "rooted": McpServerSettings(command=["npx", "-y", "server-filesystem", "{workspace}"]),
        "chosen": McpServerSettings(command=["node", "./server.js"], cwd="."),
    }
    with caplog.at_level(logging.WARNING, logger="dsh.tools.mcp"):
        McpHub(servers, workspace=workspace, secrets=SecretPolicy(), environ={}).close()
    own = Path(os.environ["DSH_HOME"]) / "mcp"
    assert [r.getMessage() for r in caplog.records] == [
        f'MCP server fs runs in {own}, not in the workspace, so its argument "." names a path '
        'there: write "{workspace}" for the workspace, or set its cwd (docs/usage.md, '
        '"MCP servers")'
    ]
