"""One configured MCP server for as long as its hub runs: its current run, restarted after a crash.

A server *crashed* when its program exits or closes its output while dsh is using it. dsh does
not restart it at once but when a call needs it, and never runs a call twice:

- A call that finds it crashed (nothing of the call was sent) restarts it and is sent to the new
  run: it had not reached the old one.
- A call during which it crashed (or whose answer was lost with it) is not repeated, since it may
  have had effects: dsh restarts the server and answers the call with an error saying that it
  crashed during the call and was restarted, so the model decides whether to call again.
- At most :data:`MAX_RESTARTS` restarts per server while its hub runs (one dsh process, for the
  shared hubs), each at least :data:`RESTART_BACKOFF_S` after the crash. After that its tools
  answer with an error naming it and how often it crashed.
- Each restart is one warning on the channel of "did not start" (the ``dsh.tools.mcp`` logger),
  and so is a restart that failed and the giving up.
- The tools the model was offered are those of the first start (the request prefix stays the
  same). A restarted server may list other tools: an offered tool it no longer lists answers with
  an error; a tool it lists anew is not offered before dsh starts it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dsh.config import McpServerSettings
from dsh.tools.base import ToolOutput
from dsh.tools.mcp.connection import ServerConnection
from dsh.tools.mcp.results import failure_output
from dsh.tools.mcp.tool import RemoteTool
from dsh.tools.secrets import SecretPolicy

log = logging.getLogger("dsh.tools.mcp")

MAX_RESTARTS = 3
RESTART_BACKOFF_S = (0.25, 0.5, 1.0)
"""Seconds from a crash before restart 1, 2 and 3 (a server that crashed long ago restarts at
once)."""
STOP_WAIT_S = 15.0
"""Seconds a restart waits for the crashed run to end (its shutdown takes at most about ten)."""


class SupervisedServer:
    """A configured server's runs: ``start`` once, ``call`` (restarting it when it crashed),
    ``close``."""

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
        self._environment = environment
        self._cwd = cwd
        self._secrets = secrets
        self.connection = self._new_connection()
        """The current run."""
        self._runs = [self.connection]
        self.task: asyncio.Task[None] | None = None
        """The current run's task."""
        self._restarting = asyncio.Lock()
        self._closing = False
        self._gave_up = False

    @property
    def crashes(self) -> int:
        return sum(run.crashed for run in self._runs)

    @property
    def restarts(self) -> int:
        return len(self._runs) - 1

    @property
    def longest_restart(self) -> float:
        """Seconds a restart may take at most (backoff, the old run's end, the new start)."""
        return max(RESTART_BACKOFF_S) + STOP_WAIT_S + self.settings.startup_timeout_s

    async def start(self) -> None:
        """Run it; returns once it started or failed to (``connection.error`` says why)."""
        if self._closing:  # the hub closed before it began
            return
        self._launch()
        await self.connection.ready.wait()

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> ToolOutput:
        """Call ``tool`` on the current run, restarting a crashed server first; an error
        output when the call could not run or the server crashed during it."""
        what = f"{tool} (MCP server {self.name})"
        run = self.connection
        if self._closing:
            return failure_output(f"{what} was not run: dsh closed it")
        if not run.started:  # it crashed (or failed to restart) before this call
            problem = await self._restart()
            if problem is not None:
                return failure_output(f"{what} was not run: {problem}")
            run = self.connection
        if tool not in run.tool_names:
            return failure_output(
                f"{what} was not run: the server no longer offers it since dsh restarted it"
            )
        output = await run.call(tool, arguments, timeout)
        if not (output.is_error and run.crashed):
            return output
        during = (
            f"{what}: the server crashed during the call ({run.error}), so the call may or may "
            "not have taken effect"
        )
        problem = await self._restart()
        if problem is not None:
            return failure_output(f"{during}; {problem}")
        return failure_output(
            f"{during}. dsh restarted the server but did not repeat the call: call it again if "
            "that is safe"
        )

    async def close(self, timeout: float) -> None:
        """Stop the current run (a restart under way starts nothing more) and wait for it."""
        self._closing = True
        self.connection.stop()
        task = self.task
        if task is None:
            return
        if not self.connection.ready.is_set():  # still starting (dsh is quitting early)
            task.cancel()  # the shutdown of the program is shielded and bounded
        _, pending = await asyncio.wait({task}, timeout=timeout)
        if pending:
            task.cancel()
            await asyncio.wait({task}, timeout=5)

    async def _restart(self) -> str | None:
        """Replace the current run, found crashed (or a restart that failed), by a new one;
        None when it started (or another call restarted it meanwhile), else why the call
        cannot run."""
        async with self._restarting:
            if self._closing:
                return "dsh closed it"
            if self.connection.started:
                return None  # another call restarted it meanwhile
            dead = self.connection
            if self.restarts >= MAX_RESTARTS:
                return self._down()
            backoff = RESTART_BACKOFF_S[self.restarts]
            ended = dead.ended_at if dead.ended_at is not None else 0.0
            wait = ended + backoff - asyncio.get_running_loop().time()
            if wait > 0:
                await asyncio.sleep(wait)
            if self.task is not None:  # the crashed program is gone before another starts
                await asyncio.wait({self.task}, timeout=STOP_WAIT_S)
            if self._closing:
                return "dsh closed it"
            self.connection = self._new_connection()
            self._runs.append(self.connection)
            self._launch()
            await self.connection.ready.wait()
            return self._restarted(dead)

    def _restarted(self, dead: ServerConnection) -> str | None:
        """Warn that the server was restarted (or did not start again); None when it runs."""
        run, count = self.connection, f"restart {self.restarts} of at most {MAX_RESTARTS}"
        if not run.started:
            log.warning(
                "MCP server %s %s and did not start again (%s): %s",
                self.name,
                _ended(dead),
                count,
                run.error,
            )
            return f"the server crashed and did not start again: {run.error}"
        changed = _tool_changes(self._runs[0].tools, run.tools)
        log.warning(
            "MCP server %s %s and was restarted (%s)%s",
            self.name,
            _ended(dead),
            count,
            f"; {changed}" if changed else "",
        )
        return None

    def _down(self) -> str:
        """Why its tools no longer run, said once as a warning too."""
        crashes = self.crashes
        times = "once" if crashes == 1 else f"{crashes} times"
        came_up = all(run.crashed or run.started for run in self._runs)
        restarted = "restarted" if came_up else "tried to restart"
        why = (
            f"MCP server {self.name} crashed {times} and dsh {restarted} it {self.restarts} "
            "times, the most it does while it runs; its tools are unavailable until dsh is "
            "started again"
        )
        if not self._gave_up:
            self._gave_up = True
            log.warning("%s (last: %s)", why, self.connection.error)
        return why

    def _new_connection(self) -> ServerConnection:
        return ServerConnection(
            self.name,
            self.settings,
            environment=self._environment,
            cwd=self._cwd,
            secrets=self._secrets,
        )

    def _launch(self) -> None:
        """Start the current run's task (on the hub's loop)."""
        self.task = asyncio.get_running_loop().create_task(self.connection.run())


def _ended(run: ServerConnection) -> str:
    """How a run ended: a crash, or a restart that did not start."""
    return f"crashed ({run.error})" if run.crashed else f"did not start ({run.error})"


def _tool_changes(offered: list[RemoteTool], listed: list[RemoteTool]) -> str:
    """How the restarted server's tool list differs from the one the model was offered."""
    before = [tool.name for tool in offered]
    now = [tool.name for tool in listed]
    gone = [name for name in before if name not in now]
    new = [name for name in now if name not in before]
    parts = []
    if gone:
        parts.append(f"it no longer offers {', '.join(gone)} (calls of them answer with an error)")
    if new:
        parts.append(f"its new tools {', '.join(new)} are offered once dsh starts again")
    return "; ".join(parts)
