"""The rules of ``[mcp.servers.NAME]``: each server is a command dsh will run.

- An untrusted project layer adds no server (``drop_project_servers``): a server the layers
  below define the same way is kept, any other is dropped, all of them named in one warning
  (never their commands or ``env``, which may hold a key).
- A trusted project's server with no ``cwd`` runs in that project's directory
  (``anchor_project_servers``); any other server with no ``cwd`` runs in ``$DSH_HOME/mcp``, out
  of the workspace's reach (``dsh.tools.mcp.placement``).
- A server's name is part of every tool name it exposes, so it is 1 to 40 letters, digits, ``_``
  or ``-``; its ``command`` names a program; its timeouts are positive (``validate_server``).
- Each server is converted on its own first (``check_servers``), so a type error names it
  (``mcp.servers.docs.command``) where a whole conversion says ``mcp.servers[...]``. A server
  written as other tools write one is refused saying what dsh takes instead: a ``url`` (a
  remote server: dsh runs stdio servers only) or ``args`` (the arguments go in ``command``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dsh.config.sections import McpServerSettings
from dsh.config.wording import check_named_tables
from dsh.errors import ConfigError

SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")


def drop_project_servers(
    layer: dict[str, Any],
    below: Mapping[str, Mapping[str, Any]],
    origin: str,
    warn: Callable[[str], None],
) -> None:
    """Remove the untrusted ``layer``'s MCP servers, one line naming them said by ``warn``."""
    servers = layer.get("mcp", {}).get("servers")
    if not isinstance(servers, Mapping):
        return
    known = below.get("mcp", {}).get("servers", {})
    ignored = [name for name, server in servers.items() if known.get(name) != server]
    if not ignored:
        return
    layer["mcp"]["servers"] = {n: s for n, s in servers.items() if n not in ignored}
    plural = "" if len(ignored) == 1 else "s"
    warn(
        f"{origin}: ignored MCP server{plural} {', '.join(ignored)}: an untrusted project may "
        "not start programs; review that file first: if you want it to apply, run `dsh trust` "
        "in that directory"
    )


def anchor_project_servers(layer: dict[str, Any], project: Path) -> None:
    """Give each server of the trusted project ``layer`` that sets no ``cwd`` the project's
    directory: the user trusted the programs that config names, which are usually the project's
    own (``python3 -m its_package``), not the code of whatever workspace dsh later runs in."""
    servers = layer.get("mcp", {}).get("servers")
    if not isinstance(servers, Mapping):
        return
    layer["mcp"]["servers"] = {
        name: {**server, "cwd": str(project)}
        if isinstance(server, Mapping) and "cwd" not in server
        else server
        for name, server in servers.items()
    }


def validate_server(name: str, server: McpServerSettings) -> None:
    """Raise ``ConfigError`` naming the key of the first rule ``server`` breaks."""
    _require(
        SERVER_NAME.fullmatch(name) is not None,
        "mcp.servers",
        f"names a server {json.dumps(name, ensure_ascii=False)}: a server name is 1 to 40 "
        "letters, digits, _ or -",
    )
    rules = [
        (
            bool(server.command) and bool(server.command[0].strip()),
            "command",
            'must name a program: command = ["program", "arg", …]',
        ),
        (server.timeout_s > 0, "timeout_s", "must be positive"),
        (server.startup_timeout_s > 0, "startup_timeout_s", "must be positive"),
    ]
    for ok, key, rule in rules:
        _require(ok, f"mcp.servers.{name}.{key}", rule)


FOREIGN_KEYS = {
    "url": "dsh supports stdio MCP servers only, a program it starts (command = "
    '["program", "arg", …]), not a remote server at a URL',
    "args": 'dsh takes a server\'s arguments in command (command = ["program", "arg", …])',
}
"""Keys other tools' MCP configs have and dsh does not (Claude Code's, Codex's), and what to
write instead: said in place of "unknown config key"."""


def check_servers(merged: Mapping[str, Mapping[str, Any]]) -> None:
    """Convert each merged server on its own, so an error names its key."""
    servers = merged.get("mcp", {}).get("servers")
    if isinstance(servers, Mapping):
        for name, table in servers.items():
            foreign = next(
                (k for k in FOREIGN_KEYS if isinstance(table, Mapping) and k in table), None
            )
            if foreign is not None:
                raise ConfigError(
                    f"config key mcp.servers.{name}.{foreign}: {FOREIGN_KEYS[foreign]}"
                )
    check_named_tables(servers, McpServerSettings, "mcp.servers.{}".format)


def _require(ok: bool, key: str, rule: str) -> None:
    if not ok:
        raise ConfigError(f"config key {key} {rule}")
