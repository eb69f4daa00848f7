"""What a failed MCP server wrote on stderr, in the warnings that quote it, has the session's
secrets masked as a tool's output has them (``connection.py``): a server that prints its own
token as it dies does not put it on the terminal, in ``--json-stream`` or in the web page."""

from __future__ import annotations

import json

from tests.cli.test_run_cli import write_script
from tests.mcp.conftest import toml_server
from tests.mcp.test_run_with_mcp import configure, dsh


def test_a_failed_server_s_stderr_is_masked_in_every_warning(tmp_path, env):
    keys = {"test": "ghp_credvalue_ABCDEFG12345", "dead": "ghp_otherval_HIJKLMN67890"}

    def table(name: str, *args: str) -> str:
        secret = {"GITHUB_PERSONAL_ACCESS_TOKEN": keys[name]}
        return toml_server(
            name, *args, env={**secret, "MCP_TEST_SAY": "GITHUB_PERSONAL_ACCESS_TOKEN"}
        )

    configure(env, table("test") + table("dead", "--crash-at-start"))
    crash = {"name": "mcp__test__crash", "arguments": {}}
    script = write_script(tmp_path / "s.json", [{"toolCalls": [crash]}, {"text": "done"}])
    done = dsh(
        "run", "--json-stream", "--script", str(script), "--allow", "mcp", "go",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for key in keys.values():
        assert key not in done.stdout and key not in done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    warned = [line["message"] for line in lines if line.get("type") == "warning"]
    masked = "tok=[masked mcp.servers.{}.env.GITHUB_PERSONAL_ACCESS_TOKEN]"
    assert any("MCP server dead did not start" in w and masked.format("dead") in w for w in warned)
    assert any("MCP server test crashed" in w and masked.format("test") in w for w in warned)
    assert masked.format("test") in done.stderr  # the terminal's warning lines as well
