"""The route and agent factories the terminal UI runs sessions with: from the settings (what
``dsh`` gives it), or injected (tests, ``dsh --script``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from dsh.agent.asked_window import with_own_window
from dsh.agent.loop import Agent, StreamListener
from dsh.agent.runtime import Route, resolve_route
from dsh.agent.wiring import build_agent
from dsh.config import Settings
from dsh.llm.window import Waiting
from dsh.store import EventStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy

RouteFactory = Callable[[str | None], Route]
"""``route(model)``: the provider, model and window for ``model`` (None: the configured one).
May raise ``MissingApiKeyError``."""

AgentFactory = Callable[[Session, Route, ApprovalPolicy, StreamListener], Agent]
"""``agent(session, route, policy, on_stream)``: the agent that runs this session's turns."""


class SettingsRoutes:
    """Routes from the settings (``/model NAME`` overrides ``provider.model``); ``script``
    is the scripted provider's script (``dsh --script FILE``), ``replay_from`` the recorded
    session the replay provider serves again from ``store`` (``dsh --replay ID``).

    Resolving one may ask the route's server its models and its window (``dsh.llm.window``:
    up to ``NOT_READY_WAIT`` seconds while it answers 503, loading its model), so the UI calls
    it off its event loop (``asks_servers``), ``waiting`` told when such a wait starts."""

    def __init__(
        self,
        settings: Settings,
        script: Path | None = None,
        *,
        replay_from: str | None = None,
        store: EventStore | None = None,
    ) -> None:
        self.settings, self.script, self.replay_from, self.store = (
            settings,
            script,
            replay_from,
            store,
        )

    @property
    def asks_servers(self) -> bool:
        """Whether a route may ask a server (not a script's, not a replay's)."""
        return self.script is None and self.replay_from is None

    def __call__(
        self, model: str | None, *, window: int | None = None, waiting: Waiting | None = None
    ) -> Route:
        """The route of ``model`` (None: the configured one) in ``window`` (None: the
        configured one, else its server's, asked): a window given is not asked of anyone."""
        chosen = self.settings
        provider = chosen.provider
        if model is not None:
            provider = msgspec.structs.replace(provider, model=model)
        if window is not None:
            provider = msgspec.structs.replace(provider, context_window=window)
        if provider is not chosen.provider:
            chosen = msgspec.structs.replace(chosen, provider=provider)
        return resolve_route(
            chosen,
            script=self.script,
            replay_from=self.replay_from,
            store=self.store,
            waiting=waiting,
        )


def settings_route_factory(
    settings: Settings,
    script: Path | None = None,
    *,
    replay_from: str | None = None,
    store: EventStore | None = None,
) -> SettingsRoutes:
    """The routes of ``settings`` (``SettingsRoutes``)."""
    return SettingsRoutes(settings, script, replay_from=replay_from, store=store)


def route_of(
    factory: RouteFactory,
    model: str | None,
    *,
    window: int | None = None,
    waiting: Waiting | None = None,
) -> Route:
    """``factory``'s route of ``model`` in the session's own ``window`` (None: the route's):
    a ``SettingsRoutes`` is given both, so it asks no server a window it is given; an injected
    factory asks none anyway."""
    if isinstance(factory, SettingsRoutes):
        return factory(model, window=window, waiting=waiting)
    return with_own_window(factory(model), window)


def settings_agent_factory(settings: Settings, workspace: Path) -> AgentFactory:
    """``build_agent`` with the settings: default tools, system prompt, compaction hooks."""

    def agent(
        session: Session, route: Route, policy: ApprovalPolicy, on_stream: StreamListener
    ) -> Agent:
        return build_agent(
            session, settings, route, workspace=workspace, policy=policy, on_stream=on_stream
        )

    return agent
