"""MCP (Model Context Protocol) client: the tools of configured MCP servers as dsh tools.

Each ``[mcp.servers.NAME]`` (docs/config.md) is a program dsh starts and speaks MCP to over its
stdin and stdout (the stdio transport, with the official ``mcp`` SDK, the ``mcp`` extra), in
``$DSH_HOME/mcp`` rather than the workspace (``placement.py``). Its
tools are listed once, when the session's parts are built, and offered to the model as
``mcp__<server>__<tool>`` (``names.py``), kind ``mcp``: each call needs approval unless the policy
is ``auto`` or ``--allow mcp`` was given. A server that does not start is one warning naming it
and why; the session runs without its tools. A server that crashes later is restarted when a call
needs it, a bounded number of times, each restart one warning on the same channel
(``supervisor.py``).

One process shares one hub per configuration (the servers, the workspace, the scrubbed
environment): a face that builds a session's parts again (a model switch, a ``/compact``) gets
the same servers and the same tool list, and a face may start them early
(``start_mcp_servers``) so the first turn does not wait for them, in a worker thread if it must
not block its event loop (the web server does, for another workspace's first turn): the lock
shared by the hubs is held only to find a hub, never while one starts. ``close_mcp_servers``
stops them all, restarted ones too; it also runs at exit, so no server outlives dsh. Nothing
here imports the SDK until a server is started: a session without one never loads it.

- ``names.py``: exposed names (the provider charset, 64 characters, unique)
- ``hub.py``: the servers' thread and event loop, start, calls, close
- ``supervisor.py``: one configured server over the hub's life: restarts after a crash
- ``placement.py``: where a server runs (not in the workspace) and how it is told the workspace
- ``connection.py``: one run of a server, its calls, and how it ends (the SDK)
- ``tool.py``: one server tool as a dsh ``Tool``; ``results.py``: its answers as ``ToolOutput``
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from dsh.config import McpSettings
from dsh.tools.base import Tool
from dsh.tools.secrets import SecretPolicy

if TYPE_CHECKING:
    from dsh.tools.mcp.hub import McpHub, ServerStatus

__all__ = ["close_mcp_servers", "mcp_tools", "start_hub", "start_mcp_servers"]

log = logging.getLogger(__name__)

_hubs: dict[str, McpHub] = {}
_hubs_lock = threading.Lock()
_closes_at_exit: list[bool] = []


def mcp_tools(
    settings: McpSettings,
    *,
    workspace: Path,
    secrets: SecretPolicy,
    environ: Mapping[str, str] | None = None,
) -> list[Tool]:
    """The tools of the enabled servers of ``settings`` (started on first use, then shared by
    this process); ``[]`` at once when there are none."""
    if not settings.enabled:
        return []
    return _shared_hub(settings, workspace, secrets, environ).tools


def start_mcp_servers(
    settings: McpSettings,
    *,
    workspace: Path,
    secrets: SecretPolicy,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Start the servers a session in ``workspace`` will use now (their warnings print now, and
    its first turn does not wait for them)."""
    mcp_tools(settings, workspace=workspace, secrets=secrets, environ=environ)


def start_hub(
    settings: McpSettings,
    *,
    workspace: Path,
    secrets: SecretPolicy,
    environ: Mapping[str, str] | None = None,
) -> tuple[McpHub, list[ServerStatus]]:
    """A hub of its own (not shared) over the enabled servers, started: ``dsh mcp list``.
    The caller closes it."""
    from dsh.tools.mcp.hub import McpHub

    hub = McpHub(settings.enabled, workspace=workspace, secrets=secrets, environ=environ)
    hub.start()
    return hub, hub.statuses


def close_mcp_servers() -> None:
    """Stop every shared hub's servers (bounded; idempotent)."""
    with _hubs_lock:
        hubs = list(_hubs.values())
        _hubs.clear()
    for hub in hubs:
        hub.close()


def _shared_hub(
    settings: McpSettings,
    workspace: Path,
    secrets: SecretPolicy,
    environ: Mapping[str, str] | None,
) -> McpHub:
    from dsh.tools.mcp.hub import McpHub

    environment = secrets.scrubbed_environment(environ)
    servers = {name: msgspec.to_builtins(s) for name, s in settings.enabled.items()}
    key = json.dumps([servers, str(workspace), sorted(environment.items())], sort_keys=True)
    with _hubs_lock:  # held only to find or add the hub: another workspace's start goes on
        hub = _hubs.get(key)
        if hub is None:
            if not _closes_at_exit:
                atexit.register(close_mcp_servers)
                _closes_at_exit.append(True)
            hub = McpHub(settings.enabled, workspace=workspace, secrets=secrets, environ=environ)
            _hubs[key] = hub
    if hub.start():  # this call started it (another one waits for that start to end)
        for status in hub.statuses:
            if not status.started:
                log.warning(
                    "MCP server %s did not start: %s; the session runs without its tools",
                    status.name,
                    status.error,
                )
    return hub
