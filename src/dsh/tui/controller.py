"""The TUI's model of one session: the log, the agent, the projector, and what the status bar
follows. No widgets here: the app listens (``Listener``) and runs the coroutines as workers.

One ``TranscriptProjector`` per opened session: the stored events are fed to it when the
session opens, and every event appended afterwards (by the agent, by ``/compact``) is fed to
it by the session observer, so what people see live is what they see after reopening.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import msgspec

from dsh.agent import session_settings
from dsh.agent.hooks import DEFAULT_WINDOW
from dsh.agent.loop import Agent, StreamListener, TurnResult
from dsh.agent.runtime import Route, build_agent, resolve_route
from dsh.compaction import CompactionEngine, make_backend, make_summarizer, run_compact_command
from dsh.compaction.commands import NOTHING_TO_COMPACT
from dsh.config import Settings
from dsh.errors import UsageError
from dsh.events import Event, UserSource
from dsh.events.codec import gc_paused
from dsh.llm.types import StreamEvent
from dsh.store import EventStore, SessionHeader
from dsh.surface import Session
from dsh.tools.approval import ApprovalAnswer, ApprovalPolicy
from dsh.transcript import MessageItem, TranscriptItem, TranscriptProjector
from dsh.tui.progress import CacheCounter, CompactionProgress

RouteFactory = Callable[[str | None], Route]
"""``route(model)``: the provider, model and window for ``model`` (None: the configured one).
May raise ``MissingApiKeyError``."""

AgentFactory = Callable[[Session, Route, ApprovalPolicy, StreamListener], Agent]
"""``agent(session, route, policy, on_stream)``: the agent that runs this session's turns."""


class Listener(Protocol):
    def event_logged(self, event: Event, items: list[TranscriptItem]) -> None:
        """An event was appended; ``items`` is what the projector made of it."""

    def streamed(self, event: StreamEvent) -> None:
        """A piece of the model's reply, before it is logged."""

    async def approve(self, tool: str, args: dict[str, Any]) -> ApprovalAnswer:
        """Ask the person whether a tool call may run."""


@dataclass(slots=True)
class TuiOptions:
    settings: Settings
    store: EventStore
    workspace: Path
    resume: str | None = None
    """The exact id of a session to open at start (None: a new session on the first prompt)."""
    route_factory: RouteFactory | None = None
    agent_factory: AgentFactory | None = None
    cursor_blink: bool = True
    greeting: str | None = None
    """A note shown when the app starts (``dsh demo --tui`` says what to try)."""
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The flags given (``{"provider": {...}}``): they override a session's recorded settings."""
    """False keeps the prompt's cursor steady (snapshot tests: a blink is a timer)."""


def settings_route_factory(settings: Settings, script: Path | None = None) -> RouteFactory:
    """Routes from the settings (``/model NAME`` overrides ``provider.model``); ``script``
    is the scripted provider's script (``dsh --script FILE``)."""

    def route(model: str | None) -> Route:
        chosen = settings
        if model is not None:
            provider = msgspec.structs.replace(settings.provider, model=model)
            chosen = msgspec.structs.replace(settings, provider=provider)
        return resolve_route(chosen, script=script)

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


class Controller:
    def __init__(self, options: TuiOptions, listener: Listener) -> None:
        self.options = options
        self.listener = listener
        self._route_factory = options.route_factory or settings_route_factory(options.settings)
        self.settings = options.settings
        """The open session's own settings (recorded, then the flags; else the configured)."""
        self.route: Route | None = None
        self.session: Session | None = None
        self.agent: Agent | None = None
        self.policy = self._new_policy()
        self.projector = TranscriptProjector()
        self.cache = CacheCounter()
        self.progress = CompactionProgress()
        self.busy: str | None = None
        self.load_seconds = 0.0
        self.project_seconds = 0.0
        self._unsubscribe: Callable[[], None] | None = None
        self._running: Agent | None = None

    # ---- lifecycle --------------------------------------------------------------------------

    def start(self) -> list[TranscriptItem]:
        """Resolve the route (``MissingApiKeyError`` if the key is missing) and open the
        session to resume, if any; returns its transcript items."""
        self.route = self._route_factory(None)
        if self.options.resume is not None:
            return self.open(self.options.resume)
        return []

    def open(self, session_id: str) -> list[TranscriptItem]:
        """Open a stored session for writing (closing the current one) and project it."""
        started = time.perf_counter()
        session = Session.open(self.options.store, session_id, writable=True)
        self.load_seconds = time.perf_counter() - started
        try:
            settings, route = self._own_settings(session)
        except BaseException:
            session.close()
            raise
        self.close()
        self.settings, self.route = settings, route
        started = time.perf_counter()
        self.session = session
        self.projector = TranscriptProjector()
        self.cache = CacheCounter()
        self.progress = CompactionProgress()
        self.policy = self._new_policy()
        self.agent = None
        feed, cache, progress = self.projector.feed, self.cache.feed, self.progress.feed
        items: list[TranscriptItem] = []
        with gc_paused():
            for event in session.events:
                items += feed(event)
                cache(event)
                progress(event)
        self.progress.reset()  # nobody runs a pass that a stored log left open
        self._unsubscribe = session.subscribe(self._observe)
        self.project_seconds = time.perf_counter() - started
        return items

    def _own_settings(self, session: Session) -> tuple[Settings, Route | None]:
        """The settings and route ``session`` recorded (a flag given at launch still wins).
        Another provider or endpoint than this UI's is refused: it needs its own launch."""
        recorded = session_settings.latest(session)
        resolved = session_settings.effective(
            self.options.settings, recorded, self.options.overrides, switch=True
        )
        wanted, route = resolved.settings.provider, self.route
        here = (
            route.provider.name if route is not None else wanted.name,
            self.options.settings.provider.base_url,
        )
        if recorded is not None and (wanted.name, wanted.base_url) != here:
            raise UsageError(
                f"session {session.id} runs on provider {wanted.name}"
                + (f" at {recorded.base_url}" if recorded.base_url else "")
                + f"; quit and run `dsh --resume {session.id}` to open it on its own route"
            )
        if route is not None and wanted.model is not None and wanted.model != route.model:
            route = self._route_factory(wanted.model)
        window = wanted.context_window
        if route is not None and window is not None and window != route.context_window:
            route = replace(route, context_window=window)
        return resolved.settings, route

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self.session is not None:
            self.session.close()
            self.session = None
        self.agent = None

    def _new_policy(self) -> ApprovalPolicy:
        return ApprovalPolicy(self.settings.tools.approval, approver=self._approve)

    async def _approve(self, tool: str, args: dict[str, Any]) -> ApprovalAnswer:
        return await self.listener.approve(tool, args)

    def _observe(self, event: Event) -> None:
        items = self.projector.feed(event)
        self.cache.feed(event)
        self.progress.feed(event)
        self.listener.event_logged(event, items)

    def ensure_session(self) -> Session:
        if self.session is None:
            self.session = Session.create(self.options.store, cwd=self.options.workspace)
            self._unsubscribe = self.session.subscribe(self._observe)
        return self.session

    # ---- turns ------------------------------------------------------------------------------

    def _agent(self) -> Agent:
        if self.agent is None:
            assert self.route is not None, "start() resolves the route first"
            factory = self.options.agent_factory or settings_agent_factory(
                self.settings, self.options.workspace
            )
            session = self.ensure_session()
            self.agent = factory(session, self.route, self.policy, self.listener.streamed)
            self._record(session, self.route)
        return self.agent

    def _record(self, session: Session, route: Route) -> None:
        """Log the settings this session runs with, when new or changed."""
        snapshot = session_settings.snapshot(
            self.settings,
            route.provider.name,
            route.model,
            route.context_window,
            str(self.options.workspace),
        )
        session_settings.record(session, snapshot)

    async def run_turn(self, prompt: str) -> TurnResult:
        if self.busy is not None:
            raise UsageError(f"{self.busy}; wait for it or press esc to cancel")
        agent = self._running = self._agent()
        self.busy = "working…"
        try:
            return await agent.run_turn(prompt)
        finally:
            self.busy = None
            self._running = None

    @property
    def waiting_since(self) -> float | None:
        """When the running turn's model call started, while it has produced nothing yet."""
        return self._running.waiting_since if self._running is not None else None

    def cancel(self) -> bool:
        """Cancel the running turn; False if none is running."""
        if self._running is None:
            return False
        self._running.cancel()
        return True

    async def compact(self, focus: str | None) -> str:
        """``/compact [focus]`` on an idle session; returns the answer people see."""
        if self.busy is not None:
            return f"{self.busy}; /compact works on an idle session"
        if self.session is None:
            return NOTHING_TO_COMPACT
        assert self.route is not None
        cfg = self.settings.compaction
        summarizer = make_summarizer(
            cfg, self.route.provider, self.route.model, history=self.session.events
        )
        backend = make_backend(cfg, summarizer)
        if backend is None:
            return "Compaction is off (compaction.backend = off)."
        engine = CompactionEngine(self.session, backend, cfg)
        self._record(self.session, self.route)
        self.busy = "compacting"
        try:
            _, text = await run_compact_command(engine, window=self.window, focus=focus)
        finally:
            self.busy = None
        return text

    # ---- reading ----------------------------------------------------------------------------

    @property
    def model(self) -> str:
        return self.route.model if self.route is not None else ""

    @property
    def window(self) -> int:
        window = self.route.context_window if self.route is not None else None
        return window or DEFAULT_WINDOW

    def context_tokens(self) -> int:
        return self.session.measure().total_tokens if self.session is not None else 0

    def sessions(self) -> list[SessionHeader]:
        """Sessions started in this workspace, oldest first."""
        here = str(self.options.workspace)
        return [h for h in self.options.store.list() if h.cwd == here]

    def switch_model(self, name: str) -> Route:
        """Use ``name`` for the next turns (the running one keeps its model)."""
        self.route = self._route_factory(name)
        self.agent = None
        return self.route


def prompts_of(items: list[TranscriptItem]) -> list[str]:
    """The prompts people typed, oldest first (for the prompt history)."""
    return [
        item.message.text()
        for item in items
        if isinstance(item, MessageItem)
        and item.message.role == "user"
        and isinstance(item.message.source, UserSource)
    ]
