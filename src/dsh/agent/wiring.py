"""The composition root: from settings + route + session, everything a session runs with.

``build_parts`` is the one place the summariser, the compaction backend and engine, the
compaction hooks, the tools (the configured MCP servers' too; the recall tools and their prompt
section when the backend is recallable, offered to the model once the log holds a checkpoint:
``dsh.agent.recall_offer``) and the window are made; ``build_agent`` puts them into an ``Agent``
with the system prompt, whose environment and instructions files are read once per opened
session (``session_environment``, ``session_instructions``). Every face builds through here
(turns through ``build_agent``, ``/compact`` through ``build_parts``), so a configured
summariser, the per-model overrides and the window are the same in the TUI, the web and ``dsh
compact``. The bench substitutes parts only through ``Injection``. Every agent's stream also
goes to its session's side file (``dsh.agent.live_text.share_stream``), so a ``dsh web`` in
another process shows the reply as it streams, whichever face runs the turn.

The window rule: the route's window (config or flag, then what the provider says, see
``resolve_route``), else ``DEFAULT_CONTEXT_WINDOW``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import msgspec

from dsh.agent.environment import Environment, detect
from dsh.agent.hooks import compaction_hooks
from dsh.agent.live_text import share_stream
from dsh.agent.loop import Agent, AgentConfig, OverflowHandler, PreStepHook, StreamListener
from dsh.agent.mcp_servers import mcp_tools, tool_secrets
from dsh.agent.prompt import instructions_section, prompt_with
from dsh.agent.recall_offer import RecallOffer, recall_offer
from dsh.agent.room import fixed_tokens, window_problem
from dsh.agent.runtime import Route, summarizer_route
from dsh.compaction import (
    CompactionEngine,
    Summarizer,
    make_backend,
    make_summarizer,
)
from dsh.compaction.commit import CommitHook
from dsh.compaction.engine import PassObserver
from dsh.config import (
    DEFAULT_CONTEXT_WINDOW,
    CompactionSettings,
    ProviderSettings,
    RecallSettings,
    Settings,
    dsh_home,
)
from dsh.errors import DshError, WindowTooSmall
from dsh.llm.registry import TEXT_TOOL_CALL_PROVIDERS, route_params, text_tool_calls_enabled
from dsh.llm.types import Provider
from dsh.store import MemoryStore, anchor_cache_path, span_cache_dir
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.registry import ToolRegistry, default_tools


@dataclass(frozen=True, slots=True)
class Wiring:
    """What ``build_parts`` takes from the settings that a bad config can fail: made before a
    session exists (``wire``), so a config error creates no session and leaves no lock."""

    compaction: CompactionSettings
    """The budgets of this route (``compaction.overrides`` applied)."""
    summarizer_provider: Provider | None
    summarizer_model: str | None
    summarizer_max_output: int | None
    """Bounds one summariser call's answer (a pass whose one-call answer would need more is
    split): the conversation's own ``max_output_tokens`` (its route override applied) when the
    summariser is the conversation's route, else that route's ``[provider.overrides]`` one."""
    params: dict[str, Any]
    text_tool_calls: bool
    generation: ProviderSettings


def wire(settings: Settings, route: Route, environ: Mapping[str, str] | None = None) -> Wiring:
    """Resolve the summariser and the route's generation settings; raises ``ConfigError``."""
    name = route.provider.name
    summarizer_provider, summarizer_model = summarizer_route(settings, route, environ)
    generation = settings.provider.for_route(name, route.model)
    summarizer_max_output = None
    if summarizer_provider is not None and summarizer_model is not None:
        if summarizer_provider is route.provider and summarizer_model == route.model:
            summarizer_max_output = generation.max_output_tokens
        else:
            override = settings.provider.override_for(summarizer_provider.name, summarizer_model)
            summarizer_max_output = override.max_output_tokens if override is not None else None
    compaction = route_budgets(settings.compaction, route)
    window = session_window(route)
    # What the window leaves above the threshold, and never less than an eighth of it (a
    # threshold_ratio near 1 would otherwise leave a reply a handful of tokens).
    output_room = max(window - int(window * compaction.threshold_ratio), window // 8)
    return Wiring(
        compaction=compaction,
        summarizer_provider=summarizer_provider,
        summarizer_model=summarizer_model,
        summarizer_max_output=summarizer_max_output,
        params=route_params(settings.provider, name, route.model, output_room=output_room),
        text_tool_calls=text_tool_calls_enabled(settings.provider, name, route.model),
        generation=generation,
    )


def route_budgets(compaction: CompactionSettings, route: Route) -> CompactionSettings:
    """The compaction settings a session on ``route`` runs with: its model's overrides, budgets
    scaled to its window, and the window its summariser's server reported when none is set."""
    budgets = compaction.for_route(route.provider.name, route.model)
    budgets = budgets.for_window(session_window(route))
    if budgets.summarizer_context_window is None and route.summarizer_window is not None:
        budgets = msgspec.structs.replace(
            budgets, summarizer_context_window=route.summarizer_window
        )
    return budgets


def session_window(route: Route) -> int:
    """The window a session on ``route`` runs (and compacts) with."""
    return route.context_window or DEFAULT_CONTEXT_WINDOW


@dataclass(frozen=True, slots=True)
class Injection:
    """What the bench substitutes for the parts every face gets (all None: nothing)."""

    summarizer: Callable[[Session], Summarizer] | None = None
    """Choose the summariser (given the session whose history it may read)."""
    on_pass: PassObserver | None = None
    """Observe every compaction pass (its result or its refusal)."""
    new_id: Callable[[], str] | None = None
    """Pass ids (deterministic ones for a reproducible log)."""
    offer_recall: bool | None = None
    """Offer the recall tools regardless of the backend (the bench's ``basic+recall`` arm)."""
    on_commit: CommitHook | None = None
    """Run right before each region commits (crash tests exit there)."""
    on_summary_call: Callable[[], None] | None = None
    """Called as each summariser call of a pass completes (``dsh run`` counts them)."""
    derived_files: bool = True
    """Keep the files derived from the log in the home's cache: history_search's lower-cased
    spans and the anchor index (the bench keeps them in memory: its sessions are throwaway)."""


@dataclass(frozen=True, slots=True)
class SessionParts:
    """What one session runs with; ``engine`` is None when compaction is off."""

    compaction: CompactionSettings
    summarizer: Summarizer
    engine: CompactionEngine | None
    hooks: tuple[PreStepHook, ...]
    overflow: OverflowHandler | None
    tools: ToolRegistry
    recall: RecallOffer | None
    """The recall tools (in ``tools``) and their prompt section, offered to the model once the
    log holds a checkpoint; None when recall is not offered."""
    window: int
    wiring: Wiring = field(repr=False)


def build_parts(
    settings: Settings,
    route: Route,
    session: Session,
    *,
    environ: Mapping[str, str] | None = None,
    wiring: Wiring | None = None,
    inject: Injection | None = None,
    workspace: Path | None = None,
    mcp: bool = True,
) -> SessionParts:
    """The summariser, engine, hooks, tools and window of ``session`` on ``route``; with
    ``mcp``, the tools of the configured MCP servers too (started in ``workspace``, default
    the session's own)."""
    parts = wiring or wire(settings, route, environ)
    extra = inject or Injection()
    compaction = parts.compaction
    if extra.summarizer is not None:
        summarizer = extra.summarizer(session)
    else:
        summarizer = make_summarizer(
            compaction,
            parts.summarizer_provider,
            parts.summarizer_model,
            history=session.events,
            on_call=extra.on_summary_call,
            max_output_tokens=parts.summarizer_max_output,
        )
    secrets = tool_secrets(settings, environ)
    tool_list = default_tools(secrets, web_fetch=settings.tools.web_fetch)
    if mcp:
        where = workspace or Path(session.header.cwd)
        tool_list += mcp_tools(settings.mcp, workspace=where, secrets=secrets, environ=environ)
    offer: RecallOffer | None = None
    recall = extra.offer_recall
    if recall is None:
        recall = compaction.backend == "recallable"
    if recall:
        span_dir = span_cache_dir(dsh_home(environ)) if extra.derived_files else None
        kept, offer = recall_offer(settings.recall, span_dir=span_dir)
        tool_list += kept
    to_come = offer.tokens_to_come if offer is not None else None
    anchor_file = partial(anchor_cache_path, dsh_home(environ)) if extra.derived_files else None
    backend = make_backend(
        compaction, summarizer, standing_after_pass=to_come, anchor_file=anchor_file
    )
    engine: CompactionEngine | None = None
    hooks: tuple[PreStepHook, ...] = ()
    overflow: OverflowHandler | None = None
    if backend is not None:
        options: dict[str, Any] = {"on_pass": extra.on_pass, "on_commit": extra.on_commit}
        if extra.new_id is not None:
            options["new_id"] = extra.new_id
        if to_come is not None:
            options["standing_after_pass"] = to_come
        engine = CompactionEngine(session, backend, compaction, **options)
        pre_step, overflow = compaction_hooks(engine)
        hooks = (pre_step,)
    return SessionParts(
        compaction=compaction,
        summarizer=summarizer,
        engine=engine,
        hooks=hooks,
        overflow=overflow,
        tools=ToolRegistry(tool_list, secrets),
        recall=offer,
        window=session_window(route),
        wiring=parts,
    )


_ENVIRONMENTS: WeakKeyDictionary[Session, Environment] = WeakKeyDictionary()


def session_environment(session: Session, workspace: Path) -> Environment:
    """The environment ``session``'s system prompt states: detected (``detect``) when the
    first agent is built on this opened session, then the same for every agent built on it in
    this process (another model after ``/model``), so its prompt stays byte-stable; a session
    opened again (``Session.open``: another process, a resume) is detected afresh."""
    known = _ENVIRONMENTS.get(session)
    if known is None:
        known = _ENVIRONMENTS.setdefault(session, detect(workspace))
    return known


_INSTRUCTIONS: WeakKeyDictionary[Session, str | None] = WeakKeyDictionary()


def session_instructions(session: Session, workspace: Path, home: Path) -> str | None:
    """The instructions files ``session``'s system prompt states (``instructions_section``),
    under the environment's rule: read when the first agent is built on this opened session,
    the same for every later agent of it in this process (an ``AGENTS.md`` edited meanwhile,
    here or in a parent directory, changes no request of it), read afresh when it is opened
    again."""
    if session not in _INSTRUCTIONS:
        _INSTRUCTIONS[session] = instructions_section(workspace, home=home)
    return _INSTRUCTIONS[session]


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
    """An agent over ``session`` with ``build_parts``'s tools, hooks and prompt sections, and
    the workspace's prompt; ``on_summary_call`` counts the summariser calls of a pass. A window
    with no room for a conversation beside the system prompt and tools as they will be sent
    is refused here (``WindowTooSmall``, ``dsh.agent.room.window_problem``): every face builds
    its agents through this, on reopen too, and checks it at start (``check_room``)."""
    inject = Injection(on_summary_call=on_summary_call)
    parts = build_parts(
        settings, route, session, environ=environ, wiring=wiring, inject=inject, workspace=workspace
    )
    generation = parts.wiring
    config = AgentConfig(
        provider=route.provider.name,
        model=route.model,
        system=prompt_with(
            workspace,
            session_environment(session, workspace),
            session_instructions(session, workspace, dsh_home(environ)),
        ),
        recall=parts.recall,
        context_window=route.context_window,
        params=generation.params,
        max_steps=max_steps,
        max_overflow_retries=parts.compaction.max_overflow_retries,
        text_tool_calls=generation.text_tool_calls,
        stream_idle_timeout=generation.generation.stream_idle_timeout,
        call_timeout=generation.generation.call_timeout,
        max_repeated_calls=settings.tools.max_repeated_calls,
        max_calls_per_reply=settings.tools.max_calls_per_reply,
        attach_mentions=settings.tools.attach_mentions,
        attach_matches=attach_matches_on(settings.recall, route.provider.name),
    )
    agent = Agent(
        session,
        route.provider,
        parts.tools,
        policy,
        config=config,
        workspace=workspace,
        pre_step_hooks=list(parts.hooks),
        overflow_handler=parts.overflow,
        on_stream=share_stream(session, dsh_home(environ), on_stream),
    )
    fixed = fixed_tokens(agent.standing_header())
    problem = window_problem(fixed=fixed, window=parts.window, budgets=parts.compaction)
    if problem is not None:
        raise WindowTooSmall(problem)
    return agent


def check_room(
    settings: Settings,
    route: Route,
    workspace: Path,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Refuse (``WindowTooSmall``) at a face's start, before any session exists, a window that
    ``build_agent`` would refuse at the first turn: an agent is built on a scratch in-memory
    session. Any other error of that build is left to the first turn to say, as before."""
    scratch = Session.create(MemoryStore(), cwd=workspace)
    try:
        build_agent(
            scratch,
            settings,
            route,
            workspace=workspace,
            policy=ApprovalPolicy("ask"),
            environ=environ,
        )
    except WindowTooSmall:
        raise
    except DshError:
        return
    finally:
        scratch.close()


def attach_matches_on(recall: RecallSettings, provider: str) -> bool:
    """Whether prompts get the compacted messages matching them (``recall.attach_matches``;
    unset: where text tool calls are read by default, the small local models' routes)."""
    chosen = recall.attach_matches
    return provider in TEXT_TOOL_CALL_PROVIDERS if chosen is None else chosen
