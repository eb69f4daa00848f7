"""The route and agent factories the terminal UI runs sessions with: from the settings (what
``dsh`` gives it), or injected (tests, ``dsh --script``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from dsh.agent.loop import Agent, StreamListener
from dsh.agent.runtime import Route, resolve_route
from dsh.agent.wiring import build_agent
from dsh.config import Settings
from dsh.store import EventStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy

RouteFactory = Callable[[str | None], Route]
"""``route(model)``: the provider, model and window for ``model`` (None: the configured one).
May raise ``MissingApiKeyError``."""

AgentFactory = Callable[[Session, Route, ApprovalPolicy, StreamListener], Agent]
"""``agent(session, route, policy, on_stream)``: the agent that runs this session's turns."""


def settings_route_factory(
    settings: Settings,
    script: Path | None = None,
    *,
    replay_from: str | None = None,
    store: EventStore | None = None,
) -> RouteFactory:
    """Routes from the settings (``/model NAME`` overrides ``provider.model``); ``script``
    is the scripted provider's script (``dsh --script FILE``), ``replay_from`` the recorded
    session the replay provider serves again from ``store`` (``dsh --replay ID``)."""

    def route(model: str | None) -> Route:
        chosen = settings
        if model is not None:
            provider = msgspec.structs.replace(settings.provider, model=model)
            chosen = msgspec.structs.replace(settings, provider=provider)
        return resolve_route(chosen, script=script, replay_from=replay_from, store=store)

    return route


def settings_agent_factory(settings: Settings, workspace: Path) -> AgentFactory:
    """``build_agent`` with the settings: default tools, system prompt, compaction hooks."""

    def agent(
        session: Session, route: Route, policy: ApprovalPolicy, on_stream: StreamListener
    ) -> Agent:
        return build_agent(
            session, settings, route, workspace=workspace, policy=policy, on_stream=on_stream
        )

    return agent
