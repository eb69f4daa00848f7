"""The settings each workspace's sessions run with in ``dsh web``: what ``dsh run --session``
in that workspace would give them, not the settings of the directory the server started in.

``dsh web`` lists and opens the sessions of every workspace, and creates sessions in any
directory (``POST /api/sessions {"cwd": …}``). A session runs with ``load_settings(cwd=its
workspace)`` — the user's config, then that workspace's ``.dsh/config.toml`` only if it is
trusted (``dsh trust``) — with the route flags ``dsh web`` was given over them, as they are over
the server's own; a ``--replay`` recording's settings over those, as for a new session in the
server's directory. So a project trusted with ``tools.approval = "auto"`` or its own
``[mcp.servers]`` loosens nothing for a session in a cloned repository the page opens: its
approval policy, MCP servers and tool settings are its own workspace's. (Its ``AGENTS.md`` and
prompt commands were always read from its workspace.)

Each workspace's settings are read once per server run, the first time a session there is
opened, created or shown (in a worker thread: it reads files), and kept: the server's own
directory's are the ones read at start. A workspace trusted or untrusted meanwhile applies at the
next ``dsh web``, as a config edit does. A config that does not load is not kept: opening a
session there is refused with its one-line error (as ``dsh run`` refuses it), and tried again
on the next open.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread

from dsh.agent import session_settings
from dsh.config import Settings, load_settings
from dsh.errors import DshError
from dsh.events import SessionSettings
from dsh.tools.approval import ApprovalPolicy
from dsh.web.errors import from_dsh_error
from dsh.web.runtime import Runtime

__all__ = ["WorkspaceSettings", "new_policy", "read_settings"]


class WorkspaceSettings:
    """``settings_of(workspace)``: the configured settings of a session in ``workspace``.

    ``overrides``: the route flags (as ``RouteFlags.overrides`` maps them). ``started``: the
    server's directory and the settings read there at start (kept as they are). ``recorded``:
    the settings of the session ``--replay`` serves, which a new session starts from.
    ``environ``: for tests (default ``os.environ``)."""

    def __init__(
        self,
        overrides: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        started: tuple[Path, Settings] | None = None,
        recorded: SessionSettings | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._overrides = {k: dict(v) for k, v in (overrides or {}).items()}
        self._recorded = recorded
        self._environ = environ
        self._kept: dict[str, Settings] = {}
        if started is not None:
            self._kept[str(started[0])] = started[1]
        self._guard = threading.Lock()
        """Held while a workspace's settings are read: what reading them warns of is said once."""

    def __call__(self, workspace: str) -> Settings:
        """The settings of a session in ``workspace``: kept, else read now (blocking file reads:
        call it in a worker thread the first time). Raises ``ConfigError`` for a config that
        does not load (the user's, or the workspace's trusted one), as ``dsh run`` would."""
        kept = self._kept.get(workspace)
        if kept is not None:
            return kept
        with self._guard:
            kept = self._kept.get(workspace)
            if kept is None:
                kept = self._kept[workspace] = self._read(Path(workspace))
            return kept

    def _read(self, workspace: Path) -> Settings:
        settings = load_settings(  # a new session with no provider named: the keys set choose
            cwd=workspace, overrides=self._overrides, environ=self._environ, choose_provider=True
        )
        if self._recorded is None:
            return settings
        resolved = session_settings.effective(
            settings, self._recorded, self._overrides, switch=True
        )
        return resolved.settings


async def read_settings(runtime: Runtime, workspace: Path | str) -> None:
    """Have ``runtime`` read the settings of sessions in ``workspace`` in a worker thread (once:
    it keeps them), so none is read on the loop. Raises ``ApiError`` for a config there that
    does not load (a session there cannot run: ``dsh run`` refuses it too)."""
    try:
        await anyio.to_thread.run_sync(runtime.base, str(workspace))
    except DshError as exc:
        raise from_dsh_error(exc) from exc


async def new_policy(runtime: Runtime, workspace: Path | str) -> ApprovalPolicy:
    """The policy a new agent in ``workspace`` starts from, its settings read off the loop."""
    return await anyio.to_thread.run_sync(runtime.new_policy, str(workspace))
