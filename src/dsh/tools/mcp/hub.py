"""The MCP hub: the configured servers' client sessions, on a thread of their own.

The SDK is async (anyio) and its sessions must live in one event loop for their whole life,
while dsh builds a session's parts synchronously and each face runs its own loop (``dsh run``
even a new one per turn). So the hub owns a daemon thread running an asyncio loop: ``start``
blocks until every server started or failed (each within its ``startup_timeout_s``, all at once),
tools call in with ``run_coroutine_threadsafe`` and await the answer with ``asyncio.wrap_future``
(cancelling the awaiting task cancels the call on the hub), and ``close`` stops every server
(bounded) and then the loop.

The tool list is made once, at ``start``: a session's tools, and so its request prefix, stay the
same while it runs, whatever the servers do later. A server that crashes keeps its tools: the next
call restarts it (``supervisor.py``: bounded, never repeating a call that may have run), and a
server that is down for good answers each call with an error naming it.

``start`` may run in a worker thread (the web server starts another workspace's servers so): a
second caller of ``start`` waits for the first one's start to end, and ``tools`` is the list once
it did.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.config import McpServerSettings
from dsh.tools.base import Tool, ToolOutput
from dsh.tools.mcp.names import exposed_names
from dsh.tools.mcp.placement import placed
from dsh.tools.mcp.results import TIMEOUT, failure_output
from dsh.tools.mcp.supervisor import SupervisedServer
from dsh.tools.mcp.tool import McpTool, RemoteTool
from dsh.tools.secrets import SecretPolicy

CLOSE_TIMEOUT = 15.0
"""Seconds ``close`` waits for the servers to stop (a server's shutdown takes at most about ten:
``kept_stdio``'s flush, stdin closed, SIGTERM, then everything it started killed)."""
CALL_GRACE = 30.0
"""Seconds a caller waits beyond a call's own timeout before it gives up on the hub itself."""


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """What became of one configured server when the hub started."""

    name: str
    command: tuple[str, ...]
    started: bool
    error: str | None
    """Why it did not start (None when it did)."""
    tools: tuple[tuple[str, RemoteTool], ...]
    """Its tools: ``(exposed name, the tool as the server listed it)``."""


class McpHub:
    """The servers of one configuration: ``start`` once, ``tools`` for the registry, ``close``."""

    def __init__(
        self,
        servers: Mapping[str, McpServerSettings],
        *,
        workspace: Path,
        secrets: SecretPolicy,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        scrubbed = secrets.scrubbed_environment(environ)
        self._servers: list[SupervisedServer] = []
        for name, configured in servers.items():
            settings, environment, cwd = placed(name, configured, workspace, scrubbed)
            self._servers.append(
                SupervisedServer(name, settings, environment=environment, cwd=cwd, secrets=secrets)
            )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._statuses: list[ServerStatus] = []
        self._tools: list[Tool] = []
        self._closed = False
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        """Held for the whole of ``start``: a second caller waits for the first one's start."""

    @property
    def statuses(self) -> list[ServerStatus]:
        """One per configured server, in the configured order (empty before ``start``)."""
        return list(self._statuses)

    @property
    def tools(self) -> list[Tool]:
        """Every started server's tools, under their exposed names, in the configured order."""
        return list(self._tools)

    def start(self) -> bool:
        """Start every server and list its tools; returns once each one started or failed
        (also when another thread's ``start`` did it). True for the call that started them."""
        with self._starting:
            with self._lock:
                if self._loop is not None or self._closed:
                    return False
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=_run_loop, args=(loop,), name="dsh-mcp", daemon=True
                )
                self._thread.start()
                self._loop = loop
            longest = max((s.settings.startup_timeout_s for s in self._servers), default=0.0)
            started = asyncio.run_coroutine_threadsafe(self._start_all(), loop)
            with contextlib.suppress(concurrent.futures.TimeoutError):
                started.result(timeout=longest + CLOSE_TIMEOUT)
            self._statuses, self._tools = self._listing()
            return True

    def running(self, server: str) -> bool:
        """Whether ``server``'s current run is up (started; not crashed, stopped or failed)."""
        found = next((s for s in self._servers if s.name == server), None)
        return found is not None and found.connection.started

    async def _start_all(self) -> None:
        await asyncio.gather(*(server.start() for server in self._servers))

    def _listing(self) -> tuple[list[ServerStatus], list[Tool]]:
        connections = [server.connection for server in self._servers]
        started = [c for c in connections if c.started]
        pairs = [(c.name, remote.name) for c in started for remote in c.tools]
        names = iter(exposed_names(pairs))
        statuses: list[ServerStatus] = []
        tools: list[Tool] = []
        for connection in connections:
            named: list[tuple[str, RemoteTool]] = []
            if connection.started:
                named = [(next(names), remote) for remote in connection.tools]
            error = None if connection.started else connection.error or "it did not start in time"
            statuses.append(
                ServerStatus(
                    connection.name,
                    tuple(connection.settings.command),
                    connection.started,
                    error,
                    tuple(named),
                )
            )
            tools += [
                McpTool(
                    name=name,
                    server=connection.name,
                    remote=remote,
                    timeout_s=connection.settings.timeout_s,
                    call=self.call,
                )
                for name, remote in named
            ]
        return statuses, tools

    async def call(
        self, server: str, tool: str, arguments: dict[str, Any], timeout: float
    ) -> ToolOutput:
        """Run ``tool`` of ``server`` on the hub's loop and await its output from the caller's
        loop; cancelling the caller cancels the call."""
        loop = self._loop
        found = next((s for s in self._servers if s.name == server), None)
        if loop is None or self._closed or found is None or loop.is_closed():
            return failure_output(f"{tool} (MCP server {server}) was not run: dsh closed it")
        future = asyncio.run_coroutine_threadsafe(found.call(tool, arguments, timeout), loop)
        longest = timeout + 2 * found.longest_restart  # restarted before it and after it
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), longest + CALL_GRACE)
        except TimeoutError:
            future.cancel()
            return failure_output(
                f"{tool} (MCP server {server}) got no answer from dsh's MCP thread", TIMEOUT
            )

    def close(self) -> None:
        """Stop every server (each one and all it started are gone when this returns, unless its
        keeper was stopped from outside) and the hub's thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        stopping = asyncio.run_coroutine_threadsafe(self._stop_all(), loop)
        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            stopping.result(timeout=CLOSE_TIMEOUT + 5)
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)

    async def _stop_all(self) -> None:
        await asyncio.gather(*(server.close(CLOSE_TIMEOUT) for server in self._servers))


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        with contextlib.suppress(RuntimeError):
            loop.close()
