"""One run of an MCP server's program, spoken to over stdio with the official SDK's session, on
the hub's event loop.

``ServerConnection.run`` is that run's whole life in one task (the transport and the SDK's
session are anyio contexts that must be entered and left by the same task): start the program
under dsh's keeper (:mod:`dsh.tools.mcp.kept_stdio`), the MCP handshake and the tool listing
within ``startup_timeout_s`` (then ``ready`` is set, with the tools or with the reason it
failed), then wait for ``stop`` or for the server to go away; leaving the contexts closes its
stdin and, if it does not exit, signals it and then kills all it started (bounded). Its stderr
goes to a temporary file, not to the terminal a face draws on; the last line of it explains a
start that failed, or a crash. Every such reason (``error``) has the session's secrets masked, as
a tool's output has: it is shown in warnings and in the answers of the calls it stops.

The messages from the server pass through ``_watch`` on their way to the SDK's session, so the end
of its output (the program exited, or closed its stdout) is seen before the session answers the
calls in flight with "connection closed": a call that fails then finds ``crashed`` already set.
Restarting a crashed server is ``supervisor.py``'s business; a connection runs once.

The SDK is imported here, inside ``run``: nothing imports it before a server is started.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from dsh.config import McpServerSettings
from dsh.tools.base import ToolOutput
from dsh.tools.mcp.kept_stdio import kept_stdio_client
from dsh.tools.mcp.results import TIMEOUT, failure_output, tool_output
from dsh.tools.mcp.tool import RemoteTool
from dsh.tools.secrets import SecretPolicy

if TYPE_CHECKING:
    from mcp import ClientSession

MISSING_SDK = (
    "the mcp package is not installed; install dsh with its mcp extra "
    "(`uv sync --extra mcp`, or `pip install 'dsh[mcp]'`)"
)
STDERR_TAIL_CHARS = 300


class ServerConnection:
    """One configured server: its state (starting, running, failed, stopped) and its calls."""

    def __init__(
        self,
        name: str,
        settings: McpServerSettings,
        *,
        environment: Mapping[str, str],
        cwd: Path,
        secrets: SecretPolicy,
    ) -> None:
        self.name = name
        self.settings = settings
        self.environment = {**environment, **settings.env}
        self.cwd = cwd
        self.secrets = secrets
        self.tools: list[RemoteTool] = []
        self.error: str | None = None
        """Why it did not start, or why it stopped answering."""
        self.ready = asyncio.Event()
        """Set once it started (``error`` None) or failed to."""
        self.crashed = False
        """It had started, and then its output ended without dsh asking it to stop."""
        self.ended_at: float | None = None
        """When (the loop's clock) it crashed or failed to start."""
        self._stopping = False
        self._ended = asyncio.Event()
        self._session: ClientSession | None = None

    @property
    def started(self) -> bool:
        """It started and still runs (not crashed, not stopped)."""
        return self.ready.is_set() and self.error is None

    @property
    def tool_names(self) -> set[str]:
        return {tool.name for tool in self.tools}

    def stop(self) -> None:
        """Ask ``run`` to close the session and the program (on the hub's loop)."""
        self._stopping = True
        self._ended.set()

    async def run(self) -> None:
        """Start the server, list its tools, serve calls until ``stop``; never raises."""
        try:
            from mcp import ClientSession
        except ImportError:
            self._failed(MISSING_SDK)
            return
        if not self.cwd.is_dir():
            self._failed(f"its working directory does not exist: {self.cwd}")
            return
        command = list(self.settings.command)
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as stderr:
            try:
                async with (
                    kept_stdio_client(
                        command, environment=self.environment, cwd=self.cwd, errlog=stderr
                    ) as (read, write),
                    anyio.create_task_group() as watching,
                ):
                    watched, received = anyio.create_memory_object_stream[Any](0)
                    watching.start_soon(self._watch, read, watched, stderr)
                    async with ClientSession(received, write) as session:
                        if await self._handshake(session, stderr):
                            await self._ended.wait()
                    watching.cancel_scope.cancel()
            except BaseException as exc:  # the SDK's task groups wrap what went wrong
                if not self.ready.is_set():
                    self._failed(self._reason(exc, stderr))
                elif self.error is None:  # it went away in a way its output did not show
                    self.error = self.secrets.mask(f"it stopped: {_describe(exc)}")
                    self._crashed()
                if not isinstance(exc, Exception):
                    raise
            finally:
                self._session = None
                if not self.ready.is_set():  # cancelled while it started (dsh is quitting)
                    self._failed("dsh stopped it while it started")
                elif self.error is None:
                    self.error = "it was stopped"

    async def _watch(self, read: Any, watched: Any, stderr: Any) -> None:
        """Pass the server's messages on to the session; when they end (the program exited or
        closed its stdout) and dsh did not stop it, it crashed: say so before the session
        hears of it."""
        async with watched:
            try:
                async for message in read:
                    await watched.send(message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # dsh is closing the transport or the session
            if self._stopping or not self.started:  # a start that fails says why itself
                return
            said = self._last_line(stderr)
            self.error = "its program exited or closed its output" + (
                f" (its stderr: {said})" if said else ""
            )
            self._crashed()

    def _crashed(self) -> None:
        """It went away while dsh used it (``error`` says how)."""
        if self._stopping:
            return
        self.crashed = True
        self.ended_at = asyncio.get_running_loop().time()
        self._ended.set()

    async def _handshake(self, session: ClientSession, stderr: Any) -> bool:
        """Initialise and list the tools within the startup timeout; True when it worked."""
        timeout = self.settings.startup_timeout_s
        try:
            with anyio.fail_after(timeout):
                await session.initialize()
                listed = await _all_tools(session)
        except TimeoutError:
            self._failed(f"no answer to the MCP handshake within {timeout:g} s")
            return False
        except Exception as exc:
            self._failed(self._reason(exc, stderr))
            return False
        self.tools = listed
        self._session = session
        self.ready.set()
        return True

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> ToolOutput:
        """Call ``tool``; a timeout, the server gone or a protocol error is an error output."""
        session = self._session
        what = f"{tool} (MCP server {self.name})"
        if session is None:
            return failure_output(f"{what} was not run: the server is not running ({self.error})")
        try:
            with anyio.fail_after(timeout):
                result = await session.call_tool(tool, arguments)
        except TimeoutError:
            return failure_output(
                f"{what} timed out after {timeout:g} s (timeout_s of the server); the call was "
                "cancelled",
                TIMEOUT,
            )
        except Exception as exc:
            return failure_output(f"{what} failed: {_describe(exc)}")
        return tool_output(result, self.secrets)

    def _failed(self, reason: str) -> None:
        self.error = self.secrets.mask(reason)  # a server's words may hold its key
        self.ended_at = asyncio.get_running_loop().time()
        self.ready.set()

    def _reason(self, exc: BaseException, stderr: Any) -> str:
        """Why the start failed, with the last line the server wrote to stderr."""
        leaf = _leaf(exc)
        if isinstance(leaf, FileNotFoundError):
            reason = f"command not found: {self.settings.command[0]}"
        elif isinstance(leaf, PermissionError):
            reason = f"not allowed to run {self.settings.command[0]}"
        else:
            reason = _describe(leaf)
        said = self._last_line(stderr)
        return f"{reason} (its stderr: {said})" if said else reason

    def _last_line(self, stderr: Any) -> str:
        """The last line the server wrote to stderr, its secrets masked (the key in its ``env``
        that it printed: the line goes into warnings, on the terminal, in ``--json-stream`` and
        in the web page's toasts), then cut to its end."""
        with contextlib.suppress(OSError, ValueError):
            stderr.flush()
            stderr.seek(0)
            text: str = stderr.read()
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:  # masked whole first: a cut through a key would leave a part unmasked
                return self.secrets.mask(lines[-1])[-STDERR_TAIL_CHARS:]
        return ""


async def _all_tools(session: ClientSession) -> list[RemoteTool]:
    """Every page of ``tools/list``."""
    from mcp_types import PaginatedRequestParams

    tools: list[RemoteTool] = []
    cursor: str | None = None
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await session.list_tools(params=params)
        tools += [RemoteTool(t.name, t.description or "", t.input_schema) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return tools


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    leaf = _leaf(exc)
    message = " ".join(str(leaf).split())
    name = type(leaf).__name__
    if name == "MCPError" and message == "Connection closed":
        return "the server closed the connection (it may have exited)"
    if name == "MCPError" and message:  # the SDK's JSON-RPC error: its message says it
        return f"the server answered with an error: {message}"
    return f"{name}: {message}" if message else name
