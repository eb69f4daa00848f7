"""How the web server makes a session's agent and compaction engine (injectable for tests).

The real ``WebRuntime`` resolves its route lazily, so the server starts and lists sessions even
when no API key is configured; tests pass a keyless route."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from dsh.agent import session_settings
from dsh.agent.hooks import DEFAULT_WINDOW
from dsh.agent.loop import Agent, StreamListener
from dsh.agent.runtime import (
    Route,
    approval_policy,
    build_agent,
    resolve_route,
    summarizer_route,
)
from dsh.compaction import CompactionEngine, make_backend, make_summarizer
from dsh.config import Settings
from dsh.store import EventStore
from dsh.surface import Session
from dsh.tools.approval import Approver

__all__ = ["DEFAULT_WINDOW", "Runtime", "WebRuntime"]


class Runtime(Protocol):
    """Makes the agent and the compaction engine of a session (injectable for tests)."""

    def make_agent(
        self, session: Session, *, on_stream: StreamListener, approver: Approver
    ) -> Agent: ...

    def make_engine(self, session: Session) -> CompactionEngine | None: ...

    def default_window(self) -> int: ...


class WebRuntime:
    """The real runtime: ``build_agent`` with the settings and a route (resolved lazily, so the
    server starts and shows sessions even when no API key is configured)."""

    def __init__(
        self,
        settings: Settings,
        route: Route | Callable[[], Route] | None = None,
        *,
        store: EventStore | None = None,
    ) -> None:
        self.settings = settings
        self._route = route
        self._store = store

    def route(self) -> Route:
        if isinstance(self._route, Route):
            return self._route
        resolved = (
            self._route()
            if self._route is not None
            else resolve_route(self.settings, store=self._store)
        )
        self._route = resolved
        return resolved

    def own_settings(self, session: Session) -> tuple[Settings, Route]:
        """The settings and route ``session`` recorded (a new session or an older log: this
        server's); a recorded route other than the server's is resolved for it."""
        recorded = session_settings.latest(session)
        settings = session_settings.effective(self.settings, recorded).settings
        route = self.route()
        if recorded is None:
            return settings, route
        wanted = settings.provider
        if (wanted.name, wanted.model) != (route.provider.name, route.model):
            route = resolve_route(settings, store=self._store)
        if wanted.context_window is not None and wanted.context_window != route.context_window:
            route = replace(route, context_window=wanted.context_window)
        return settings, route

    def make_agent(
        self, session: Session, *, on_stream: StreamListener, approver: Approver
    ) -> Agent:
        settings, route = self.own_settings(session)
        policy = approval_policy(settings, yes=False, allow=frozenset())
        policy.approver = approver
        agent = build_agent(
            session,
            settings,
            route,
            workspace=Path(session.header.cwd),
            policy=policy,
            on_stream=on_stream,
        )
        _record(session, settings, route)
        return agent

    def make_engine(self, session: Session) -> CompactionEngine | None:
        settings, route = self.own_settings(session)
        cfg = settings.compaction.for_route(route.provider.name, route.model)
        provider = model = None
        if cfg.summarizer != "extractive":
            provider, model = summarizer_route(settings, route)
        backend = make_backend(cfg, make_summarizer(cfg, provider, model, history=session.events))
        if backend is None:
            return None
        _record(session, settings, route)
        return CompactionEngine(session, backend, cfg)

    def default_window(self) -> int:
        if isinstance(self._route, Route) and self._route.context_window:
            return self._route.context_window
        return self.settings.provider.context_window or DEFAULT_WINDOW


def _record(session: Session, settings: Settings, route: Route) -> None:
    snapshot = session_settings.snapshot(
        settings, route.provider.name, route.model, route.context_window, session.header.cwd
    )
    session_settings.record(session, snapshot)
