"""How the web server makes a session's agent and compaction engine (injectable for tests).

The real ``WebRuntime`` is the settings wiring every face uses (``dsh.agent.session_runner``)
with its route resolved lazily, so the server starts and lists sessions even when no API key is
configured; tests pass a keyless route. It keeps the route ``/model NAME`` chose for a session
(``dsh.web.models``), which that session's next agents and ``/compact`` run on. A session's
route is resolved in a worker thread and kept (``next_routes``, ``dsh.web.next_route``): the
agent, the engine and the settings record the runner makes on the loop take it from there.

A session runs with its own workspace's settings (``base``: ``dsh.web.workspace_settings``),
not those of the directory the server started in: its approval policy, MCP servers and tool
settings are what ``dsh run --session`` in its workspace would give it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import msgspec

from dsh.agent import session_settings
from dsh.agent.asked_window import say_window_change
from dsh.agent.model_command import switched
from dsh.agent.runtime import Route, approval_policy, resolve_route
from dsh.agent.session_runner import SessionWiring, SettingsWiring
from dsh.config import DEFAULT_CONTEXT_WINDOW, Settings
from dsh.errors import DshError
from dsh.events import SessionSettings
from dsh.store import EventStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolKind
from dsh.web.next_route import NextRoutes
from dsh.web.route_wait import RouteWaits

__all__ = ["Runtime", "WebRuntime"]


class Runtime(SessionWiring, Protocol):
    """A runner's wiring, plus the window the page shows before any route is resolved, the
    start of a session's MCP servers (which the server runs in a worker thread), the route (a
    new session's first prompt resolves it before the session is written) and the approval
    policy every agent made here starts from; the settings and route a session runs with, and
    the routes ``/model`` chose; the next routes of its sessions, resolved off the loop."""

    next_routes: NextRoutes

    def default_window(self) -> int: ...

    def own(self, session: Session) -> tuple[Settings, Route]: ...

    def own_later(self, session: Session) -> Callable[[], Route]: ...

    def model_route(
        self, session: Session, name: str, before: int | None = None
    ) -> Callable[[], tuple[Route, str]]: ...

    def choose_route(self, session_id: str, route: Route) -> None: ...

    def chosen_route(self, session_id: str) -> Route | None: ...

    def mcp_start(self, session: Session) -> Callable[[], None]: ...

    route_waits: RouteWaits

    def route(self) -> Route: ...

    def base(self, workspace: str) -> Settings: ...

    def new_policy(self, workspace: str) -> ApprovalPolicy: ...


class WebRuntime(SettingsWiring):
    """``build_agent`` / ``build_parts`` with the settings and a route (resolved when first
    needed, so the server starts and shows sessions even when no API key is configured).

    ``overrides``: the flags ``dsh web`` was started with (``--provider``, ``--base-url``, …),
    already in ``settings``; they also win over what a session continued here recorded.
    ``script`` and ``replay_from`` feed the keyless providers (``--script``, ``--replay``) on
    every route resolved here, a session's recorded model's too. ``yes`` and ``allow``: the
    approval flags (``--yes``, ``--allow``) every agent made here runs with. ``workspaces``:
    the configured settings of a session by its workspace (``WorkspaceSettings``: each
    workspace's own, with the flags); None gives every session ``settings`` (tests).
    ``echo_waits``: told the line saying a route's server is loading its model, as the pages
    are (``dsh.web.route_wait``; ``dsh web``'s: stderr, as ``dsh run`` says it)."""

    def __init__(
        self,
        settings: Settings,
        route: Route | Callable[[], Route] | None = None,
        *,
        store: EventStore | None = None,
        overrides: Mapping[str, Mapping[str, Any]] | None = None,
        script: Path | None = None,
        replay_from: str | None = None,
        yes: bool = False,
        allow: frozenset[ToolKind] = frozenset(),
        workspaces: Callable[[str], Settings] | None = None,
        echo_waits: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(
            settings,
            self._resolved,
            reroute=self._resolve_for,
            overrides=overrides,
            yes=yes,
            allow=allow,
        )
        self._route = route
        self._store = store
        self._script = script
        self._replay_from = replay_from
        self._workspaces = workspaces
        self._chosen: dict[str, Route] = {}
        """The routes ``/model NAME`` chose, by session id, for the rest of the server's run."""
        self.next_routes = NextRoutes(self)
        """Each session's next route, resolved in a worker thread (``dsh.web.next_route``)."""
        self.route_waits = RouteWaits(echo_waits)
        """A server loading its model, waited for while a route resolves: said to the pages
        (``dsh.web.route_wait``) and to ``echo_waits``."""

    def _resolve_for(self, settings: Settings) -> Route:
        with self.route_waits.around() as waiting:
            return resolve_route(
                settings,
                script=self._script,
                replay_from=self._replay_from,
                store=self._store,
                waiting=waiting,
            )

    def base(self, workspace: str) -> Settings:
        """The configured settings of a session in ``workspace``, the flags over them: that
        workspace's own (``dsh.web.workspace_settings``; read, the first time, where this is
        called: a worker thread). Raises ``ConfigError`` for a config there that does not load."""
        return self.settings if self._workspaces is None else self._workspaces(workspace)

    def new_policy(self, workspace: str) -> ApprovalPolicy:
        """The policy a new agent of a session in ``workspace`` starts from; where that
        workspace's config does not load (nothing runs there: a turn says why), dsh's default
        mode under the flags."""
        try:
            return super().new_policy(workspace)
        except DshError:
            return approval_policy(Settings(), yes=self.yes, allow=self.allow)

    def _own_of(
        self, session_id: str, recorded: SessionSettings | None, workspace: str, *, say: bool = True
    ) -> tuple[session_settings.Resolved, Route]:
        """A session that recorded no settings yet (a new one) in a workspace whose config
        gives another route than the server's (its own trusted ``[provider]``) runs on that
        route, as ``dsh run`` there would; else as the wiring gives it."""
        if recorded is None and self.chosen_route(session_id) is None:
            own = self.base(workspace)
            if (own.provider, own.compaction) != (self.settings.provider, self.settings.compaction):
                return session_settings.Resolved(own), self._resolve_for(own)
        return super()._own_of(session_id, recorded, workspace, say=say)

    def _resolved(self) -> Route:
        if not isinstance(self._route, Route):
            resolve = self._route or (lambda: self._resolve_for(self.settings))
            self._route = resolve()
        return self._route

    def default_window(self) -> int:
        if isinstance(self._route, Route) and self._route.context_window:
            return self._route.context_window
        return self.settings.provider.context_window or DEFAULT_CONTEXT_WINDOW

    def model_route(
        self, session: Session, name: str, before: int | None = None
    ) -> Callable[[], tuple[Route, str]]:
        """The route of model ``name`` on the session's provider and the line that says it,
        resolved as the terminal UI's ``/model NAME`` resolves it (``dsh.agent.model_command
        .switched``: in the window the session set — ``dsh web``'s flags, else one it recorded
        as set, else the config's — else the one the new model's server reports; ``before``,
        the window it ran in), the way ``mcp_start`` is: made on the loop (it reads the
        session), called in a worker thread (resolving may ask a server its window; it raises
        ``DshError`` when it cannot be done: a missing key)."""
        settings = self.own_settings(session)  # its window: unset when its server gave it
        configured = self.base(session.header.cwd).provider
        window = configured.context_window
        provider = msgspec.structs.replace(settings.provider, model=name, context_window=window)
        wanted = msgspec.structs.replace(settings, provider=provider)
        return lambda: switched(self._resolve_for(wanted), settings.provider, configured, before)

    def own_later(self, session: Session) -> Callable[[], Route]:
        """The route ``own`` gives ``session``, in two steps: the session read now (on the
        loop, where it is appended to), its route resolved when the result is called (in a
        worker thread: a session on another model than the server's resolves its own route,
        which may ask its server its window). Resolving raises ``DshError`` when it cannot be
        done (a missing key). It says nothing: what it finds to warn of (a recorded value no
        longer valid, a window its server now reports otherwise) is said once a turn or a
        ``/compact`` runs on it, as before, not when a page only shows the session."""
        session_id, workspace = session.id, session.header.cwd
        recorded = session_settings.latest(session)
        return lambda: self._own_of(session_id, recorded, workspace, say=False)[1]

    def _own(self, session: Session) -> tuple[session_settings.Resolved, Route]:
        """What ``own``, ``record_settings_of`` and so the agent and engine made on the loop
        take: the route kept for the session's latest record (``next_routes``, resolved in a
        worker thread before a turn or a ``/compact`` starts: ``next_route.ready_handle``), not
        resolved again here; ``/model``'s choice as the wiring takes it. Resolved here only
        when none is kept (a runner driven apart from the registry)."""
        kept = self.next_routes.kept(session)
        if kept is None or self.chosen_route(session.id) is not None:
            return super()._own(session)
        recorded = session_settings.latest(session)
        say_window_change(session.id, recorded, kept)  # as ``_own_of`` says it of its route
        return self._effective(session.id, recorded, session.header.cwd), kept

    def choose_route(self, session_id: str, route: Route) -> None:
        """The session's next agents (and ``/compact``) run on ``route``."""
        self._chosen[session_id] = route

    def chosen_route(self, session_id: str) -> Route | None:
        """The route ``/model NAME`` chose for the session, if any."""
        return self._chosen.get(session_id)
