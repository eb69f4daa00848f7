"""How the web server makes a session's agent and compaction engine (injectable for tests).

The real ``WebRuntime`` resolves its route lazily, so the server starts and lists sessions even
when no API key is configured; tests pass a keyless route."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

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

    def make_agent(
        self, session: Session, *, on_stream: StreamListener, approver: Approver
    ) -> Agent:
        policy = approval_policy(self.settings, yes=False, allow=frozenset())
        policy.approver = approver
        return build_agent(
            session,
            self.settings,
            self.route(),
            workspace=Path(session.header.cwd),
            policy=policy,
            on_stream=on_stream,
        )

    def make_engine(self, session: Session) -> CompactionEngine | None:
        route = self.route()
        cfg = self.settings.compaction.for_route(route.provider.name, route.model)
        provider = model = None
        if cfg.summarizer != "extractive":
            provider, model = summarizer_route(self.settings, route)
        backend = make_backend(cfg, make_summarizer(cfg, provider, model, history=session.events))
        return CompactionEngine(session, backend, cfg) if backend is not None else None

    def default_window(self) -> int:
        if isinstance(self._route, Route) and self._route.context_window:
            return self._route.context_window
        return self.settings.provider.context_window or DEFAULT_WINDOW
