"""``dsh mcp list``: the configured MCP servers, whether each one starts, and its tools.

The servers are those a session in the workspace (``--cwd``, default here) would start: the
user config's and, once the directory is trusted (``dsh trust``), the project's. Each enabled one
is started as a session would start it, listed, and stopped again.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from dsh.agent.mcp_servers import tool_secrets
from dsh.cli import context
from dsh.config import dsh_home, load_settings
from dsh.errors import printable_line
from dsh.tools.mcp import start_hub

DESCRIPTION_CHARS = 72
"""A tool's description is shown up to here (its first line)."""


@click.group("mcp")
def mcp() -> None:
    """List the configured MCP servers, whether they start, and the tools they offer."""


@mcp.command("list")
@click.option(
    "--cwd",
    "workspace_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The workspace whose configuration to read, given to the servers (default: here).",
)
def list_servers(workspace_dir: Path | None) -> None:
    """Start each configured MCP server, print its tools under the names the model sees, and
    stop it; exit 1 when an enabled server did not start."""
    workspace = (workspace_dir or context.cwd()).resolve()
    settings = load_settings(cwd=workspace)
    servers = settings.mcp.servers
    if not servers:
        where = dsh_home() / "config.toml"
        click.echo(f"no MCP servers configured (add [mcp.servers.NAME] to {where})")
        return
    hub, statuses = start_hub(settings.mcp, workspace=workspace, secrets=tool_secrets(settings))
    failed = 0
    try:
        started = {status.name: status for status in statuses}
        for name, server in servers.items():
            command = shlex.join(server.command)
            status = started.get(name)
            if status is None:
                click.echo(f"{name}: disabled ({command})")
            elif not status.started:
                failed += 1
                click.echo(f"{name}: did not start: {status.error} ({command})")
            else:
                count = f"{len(status.tools)} tool" + ("" if len(status.tools) == 1 else "s")
                click.echo(f"{name}: started, {count} ({command})")
                width = max((len(exposed) for exposed, _ in status.tools), default=0)
                for exposed, remote in status.tools:
                    click.echo(f"  {exposed.ljust(width)}  {_first_line(remote.description)}")
    finally:
        hub.close()
    if failed:
        raise SystemExit(1)


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    line = printable_line(lines[0]) if lines else ""  # a server's words: no escape acts
    return line if len(line) <= DESCRIPTION_CHARS else line[: DESCRIPTION_CHARS - 1] + "…"
