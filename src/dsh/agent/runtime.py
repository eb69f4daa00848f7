"""Assembling an ``Agent`` from settings: provider, model, window, tools, approval, prompt.

Faces (CLI, TUI, web) call ``build_agent`` and never wire the parts themselves.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.agent.hooks import compaction_hooks
from dsh.agent.loop import Agent, AgentConfig, OverflowHandler, PreStepHook, StreamListener
from dsh.agent.prompt import system_prompt
from dsh.compaction import CompactionEngine, RecallableBackend, make_backend, make_summarizer
from dsh.config import DEFAULT_CONTEXT_WINDOW, CompactionSettings, ProviderSettings, Settings
from dsh.errors import ConfigError
from dsh.llm.registry import (
    KNOWN_PROVIDERS,
    make_provider,
    route_params,
    text_tool_calls_enabled,
)
from dsh.llm.replay import ReplayProvider
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import Provider
from dsh.llm.window import discover_window
from dsh.recall import RECALL_PROMPT_SECTION, recall_tools
from dsh.store import EventStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolKind
from dsh.tools.registry import ToolRegistry, default_tools
from dsh.tools.secrets import SecretPolicy

SCRIPTED_CONTEXT_WINDOW = DEFAULT_CONTEXT_WINDOW
DEFAULT_WINDOW = DEFAULT_CONTEXT_WINDOW
"""The window assumed for a server that does not say its own (and none is configured)."""


@dataclass(frozen=True, slots=True)
class Route:
    provider: Provider
    model: str
    context_window: int | None
    notice: str | None = None
    """Something the face should say once (the server did not report its window)."""


def resolve_route(
    settings: Settings,
    *,
    script: Path | None = None,
    replay_from: str | None = None,
    store: EventStore | None = None,
    environ: Mapping[str, str] | None = None,
) -> Route:
    """The provider, model and context window the settings (and flags) ask for."""
    cfg = settings.provider
    window = cfg.context_window
    if cfg.name == "scripted" or (script is not None and cfg.name in ("scripted", "deepseek")):
        if script is None:
            raise ConfigError("the scripted provider needs --script FILE")
        model = cfg.model or "scripted"
        return Route(
            ScriptedProvider.from_file(script, model=model, cache="deepseek"),
            model,
            window or SCRIPTED_CONTEXT_WINDOW,
        )
    if cfg.name == "replay":
        if replay_from is None or store is None:
            raise ConfigError("the replay provider needs --replay SESSION_ID")
        model = cfg.model or "replay"
        return Route(
            ReplayProvider.from_log(store, replay_from), model, window or SCRIPTED_CONTEXT_WINDOW
        )
    env = os.environ if environ is None else environ
    provider, model, known_window = make_provider(
        cfg.name, model=cfg.model, base_url=cfg.base_url, api_key=cfg.api_key, environ=env
    )
    if window or known_window or cfg.base_url is None:
        return Route(provider, model, window or known_window)
    found = discover_window(
        cfg.base_url, model, cfg.api_key or env.get(KNOWN_PROVIDERS[cfg.name].key_env)
    )
    if found is not None:
        return Route(provider, model, found.window)
    notice = (
        f"{cfg.base_url} does not report its context window; assuming {DEFAULT_WINDOW:,} tokens "
        "(set provider.context_window or --context-window)"
    )
    return Route(provider, model, DEFAULT_WINDOW, notice)


def summarizer_route(
    settings: Settings, route: Route, environ: Mapping[str, str] | None = None
) -> tuple[Provider | None, str | None]:
    """Who writes model summaries (extractive needs no one).

    ``compaction.summarizer`` is a model name (tags and all: ``qwen2.5-coder:0.5b``) on the
    conversation's provider, or ``provider:model`` when the prefix is a known provider.
    ``compaction.summarizer_provider`` / ``summarizer_base_url`` name the route explicitly. A
    summariser on the conversation's provider inherits its base URL and key."""
    cfg = settings.compaction
    summarizer = cfg.summarizer
    if summarizer == "extractive":
        return None, None
    name, model = route.provider.name, summarizer
    prefix, colon, rest = summarizer.partition(":")
    if cfg.summarizer_provider is not None:
        name = cfg.summarizer_provider
    elif colon and prefix in KNOWN_PROVIDERS:
        name, model = prefix, rest
    same = name == route.provider.name
    if same and cfg.summarizer_base_url is None:
        return route.provider, model
    conversation = settings.provider
    provider, resolved, _ = make_provider(
        name,
        model=model,
        base_url=cfg.summarizer_base_url or (conversation.base_url if same else None),
        api_key=conversation.api_key if same else None,
        environ=os.environ if environ is None else environ,
    )
    return provider, resolved


def approval_policy(settings: Settings, *, yes: bool, allow: frozenset[ToolKind]) -> ApprovalPolicy:
    """Headless policy: ``--yes`` means auto; otherwise the configured mode with ``allow``."""
    if yes:
        return ApprovalPolicy("auto")
    return ApprovalPolicy(settings.tools.approval, allow=allow)


@dataclass(frozen=True, slots=True)
class Wiring:
    """What ``build_agent`` takes from the settings that a bad config can fail: made before a
    session exists (``wire``), so a config error creates no session and leaves no lock."""

    compaction: CompactionSettings
    summarizer_provider: Provider | None
    summarizer_model: str | None
    params: dict[str, Any]
    text_tool_calls: bool
    generation: ProviderSettings


def wire(settings: Settings, route: Route, environ: Mapping[str, str] | None = None) -> Wiring:
    """Resolve the summariser and the route's generation settings; raises ``ConfigError``."""
    name = route.provider.name
    summarizer_provider, summarizer_model = summarizer_route(settings, route, environ)
    return Wiring(
        compaction=settings.compaction.for_route(name, route.model),
        summarizer_provider=summarizer_provider,
        summarizer_model=summarizer_model,
        params=route_params(settings.provider, name, route.model),
        text_tool_calls=text_tool_calls_enabled(settings.provider, name, route.model),
        generation=settings.provider.for_route(name, route.model),
    )


def build_agent(
    session: Session,
    settings: Settings,
    route: Route,
    *,
    workspace: Path,
    policy: ApprovalPolicy,
    on_stream: StreamListener | None = None,
    max_steps: int = 50,
    environ: Mapping[str, str] | None = None,
    wiring: Wiring | None = None,
    on_summary_call: Callable[[], None] | None = None,
) -> Agent:
    """An agent over ``session``: default tools (plus the recall tools and their prompt section
    when the recallable backend is active), compaction hooks, and the workspace's prompt."""
    parts = wiring or wire(settings, route, environ)
    compaction = parts.compaction
    backend = make_backend(
        compaction,
        make_summarizer(
            compaction,
            parts.summarizer_provider,
            parts.summarizer_model,
            history=session.events,
            on_call=on_summary_call,
        ),
    )
    secrets = SecretPolicy.from_environment(
        environ,
        extra_patterns=settings.tools.scrub_env,
        configured_keys=[("provider.api_key", settings.provider.api_key)],
    )
    tool_list = default_tools(secrets)
    sections: tuple[str, ...] = ()
    if isinstance(backend, RecallableBackend):
        tool_list += recall_tools(settings.recall)
        sections = (RECALL_PROMPT_SECTION,)
    hooks: list[PreStepHook] = []
    overflow: OverflowHandler | None = None
    if backend is not None:
        engine = CompactionEngine(session, backend, compaction)
        pre_step, overflow = compaction_hooks(engine)
        hooks.append(pre_step)
    config = AgentConfig(
        provider=route.provider.name,
        model=route.model,
        system=system_prompt(workspace, sections=sections),
        context_window=route.context_window,
        params=parts.params,
        max_steps=max_steps,
        max_overflow_retries=compaction.max_overflow_retries,
        text_tool_calls=parts.text_tool_calls,
        stream_idle_timeout=parts.generation.stream_idle_timeout,
        call_timeout=parts.generation.call_timeout,
    )
    return Agent(
        session,
        route.provider,
        ToolRegistry(tool_list, secrets),
        policy,
        config=config,
        workspace=workspace,
        pre_step_hooks=hooks,
        overflow_handler=overflow,
        on_stream=on_stream,
    )
