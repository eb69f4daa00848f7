"""The TUI's model of one session: its ``SessionRunner`` (the log, the agent, the one running
activity, cancel), the projector, and what the status bar follows. No widgets here: the app
listens (``Listener``) and runs the coroutines as workers.

One ``TranscriptProjector`` per opened session: the stored events are fed to it when the
session opens, and every event appended afterwards (by the agent, by ``/compact``) is fed to
it by the session observer, so what people see live is what they see after reopening.

Each open tells the session's load warnings once (``tell_load_warnings``): the app shows them
as it shows dsh's other warnings, where the CLI prints them as ``dsh: warning:`` lines.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dsh.agent import session_settings
from dsh.agent.asked_window import keep_reported, say_window_change, with_own_window
from dsh.agent.cancel import CANCELLED_BY_USER
from dsh.agent.context_fold import ContextFold
from dsh.agent.context_report import next_request_tokens
from dsh.agent.loop import Agent, TurnResult
from dsh.agent.model_command import switched, switched_note
from dsh.agent.runtime import Route, approval_policy
from dsh.agent.session_runner import (
    COMPACT_CANCELLED,
    NOTHING_TO_COMPACT,
    CompactionOff,
    SessionBusy,
    SessionRunner,
    record_settings,
)
from dsh.agent.undo import NOTHING_TO_UNDO
from dsh.agent.wiring import check_room, session_window
from dsh.config import DEFAULT_CONTEXT_WINDOW, Settings, redact
from dsh.errors import PromptTooLarge, UsageError
from dsh.events import CommandDoneEvent, Event, UserSource
from dsh.events.codec import gc_paused
from dsh.llm.sdk_client import warm
from dsh.llm.types import StreamEvent
from dsh.llm.window import Waiting
from dsh.store import EventStore, SessionHeader
from dsh.store.migrate import remove_kept_session
from dsh.surface import Session
from dsh.tools.approval import ApprovalAnswer, ApprovalMode, ApprovalPolicy
from dsh.tools.base import ToolKind
from dsh.transcript import MessageItem, TranscriptItem, TranscriptProjector
from dsh.tui.face_wiring import FaceWiring
from dsh.tui.factories import (
    AgentFactory,
    RouteFactory,
    SettingsRoutes,
    route_of,
    settings_route_factory,
)
from dsh.tui.progress import CacheCounter, CompactionProgress
from dsh.tui.workspace_shown import workspace_note

_store_log = logging.getLogger("dsh.store")


class Listener(Protocol):
    def event_logged(self, event: Event, items: list[TranscriptItem]) -> None:
        """An event was appended; ``items`` is what the projector made of it."""

    def streamed(self, event: StreamEvent) -> None:
        """A piece of the model's reply, before it is logged."""

    async def approve(
        self, tool: str, args: dict[str, Any], protected: str | None
    ) -> ApprovalAnswer:
        """Ask the person whether a tool call may run (``protected``: why it is asked every
        time, with no "always" offered; see :data:`dsh.tools.approval.Approver`)."""


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
    """False keeps the prompt's cursor steady (snapshot tests: a blink is a timer)."""
    greeting: str | None = None
    """A note shown when the app starts (``dsh demo --tui`` says what to try)."""
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The flags given (``{"provider": {...}}``): they override a session's recorded settings."""
    load_warnings: tuple[str, ...] = ()
    """What was warned of before the app started, where a printed line would be hidden by it:
    reading the configuration (an untrusted project config ignored, a key it may not set) and
    loading ``resume`` (``dsh --resume ID --cwd DIR`` opens it first to log the workspace).
    Told when the app starts, with its own opens'."""
    yes: bool = False
    """``--yes``: approval mode ``auto`` for this process, over ``tools.approval``."""
    allow: frozenset[ToolKind] = frozenset()
    """``--allow``: the tool kinds that run unasked, whatever the mode."""
    started_in: Path | None = None
    """Where ``dsh`` was started, when the resumed session's tools run elsewhere: the UI says so."""
    workspace_from_flag: bool = False
    """The workspace is ``--cwd``'s, not the resumed session's recorded one."""


def tell_load_warnings(warnings: Iterable[str]) -> None:
    """Log each of a session's load warnings (a torn last line moved aside, a turn a crashed
    process left open closed, SQLite's ``quick_check`` after an unclean stop) as the lines the
    CLI prints: while the app runs, a toast each and a row in ``/warnings``
    (``dsh.tui.app_warnings``), from whichever thread opened the session."""
    for warning in warnings:
        _store_log.warning("%s", warning)


class Controller:
    def __init__(self, options: TuiOptions, listener: Listener) -> None:
        self.options = options
        self.listener = listener
        self._route_factory = options.route_factory or settings_route_factory(options.settings)
        self.settings = options.settings
        """The open session's own settings (recorded, then the flags; else the configured)."""
        self.resolved = session_settings.Resolved(options.settings)
        """What the flags change of the open session's recorded settings: said when logged."""
        self.route: Route | None = None
        self.runner: SessionRunner | None = None
        self.chosen_approval: ApprovalMode | None = None
        """The mode ``/approval MODE`` chose for the rest of this process (None: none chosen)."""
        self.policy = self._new_policy()
        self.projector = TranscriptProjector()
        self.cache = CacheCounter()
        self.progress = CompactionProgress()
        self.context = ContextFold()
        """``/context`` and ``/cost``'s view of the open session's log, kept as it grows."""
        self.load_seconds = 0.0
        self.project_seconds = 0.0
        self._unsubscribe: Callable[[], None] | None = None
        self.on_server_wait: Waiting | None = None
        """Told when resolving a route starts waiting for its server to load its model."""

    # ---- lifecycle --------------------------------------------------------------------------

    def start(self, *, resume: bool = True) -> list[TranscriptItem]:
        """Resolve the route (``MissingApiKeyError`` if the key is missing) and open the
        session to resume, if any (and ``resume``: False leaves that to the caller); returns
        its transcript items."""
        tell_load_warnings(self.options.load_warnings)
        self.route = self.route_of(None)
        if resume and self.options.resume is not None:
            return self.open(self.options.resume)
        self._check_room(self.settings, self.route)
        return []

    def _check_room(self, settings: Settings, route: Route | None) -> None:
        """Refuse a window the system prompt and tools leave no room in (``WindowTooSmall``,
        ``dsh.agent.wiring.check_room``) when the session's route is known, not at its first
        prompt; agents a test injects (``agent_factory``) are its own business."""
        if self.options.agent_factory is None and route is not None:
            check_room(settings, route, self.options.workspace)

    def open(self, session_id: str) -> list[TranscriptItem]:
        """Open a stored session for writing (closing the current one) and project it."""
        started = time.perf_counter()
        runner = SessionRunner.open(
            self.options.store, session_id, FaceWiring(self), approver=self._approve
        )
        self.load_seconds = time.perf_counter() - started
        tell_load_warnings(runner.session.warnings)  # what this open repaired, once
        try:
            resolved, route = self._own_settings(runner.session)
            self._check_room(resolved.settings, route)
        except BaseException:
            runner.close()
            raise
        self.close()
        self.settings, self.route, self.resolved = resolved.settings, route, resolved
        started = time.perf_counter()
        self._adopt(runner)
        session = runner.session
        self.projector = TranscriptProjector()
        self.cache = CacheCounter()
        self.progress = CompactionProgress()
        self.policy = self._new_policy()
        feed, cache, progress = self.projector.feed, self.cache.feed, self.progress.feed
        items: list[TranscriptItem] = []
        with gc_paused():
            for event in session.events:
                items += feed(event)
                cache(event)
                progress(event)
        self.progress.reset()  # nobody runs a pass that a stored log left open
        self._unsubscribe = runner.subscribe(self._observe)
        self.project_seconds = time.perf_counter() - started
        return items

    def new_session(self, route: Route | None = None) -> str | None:
        """Close the open session (it stays in the store) and start afresh as ``dsh`` does:
        the configured settings and ``route`` (None: resolved here), a new approval policy;
        the next prompt creates the session. Returns the id of the session left (None: none
        was open)."""
        left = self.session.id if self.session is not None else None
        route = route or self.route_of(None)  # may raise: the open session is kept then
        self.close()
        self.settings, self.route = self.options.settings, route
        self.resolved = session_settings.Resolved(self.settings)
        self.projector = TranscriptProjector()
        self.cache = CacheCounter()
        self.progress = CompactionProgress()
        self.policy = self._new_policy()
        return left

    def _adopt(self, runner: SessionRunner) -> None:
        runner.on_stream = self.listener.streamed
        self.runner = runner

    @property
    def session(self) -> Session | None:
        return self.runner.session if self.runner is not None else None

    @property
    def agent(self) -> Agent | None:
        """The open session's agent, once a turn has built it."""
        return self.runner.agent if self.runner is not None else None

    def _own_settings(self, session: Session) -> tuple[session_settings.Resolved, Route | None]:
        """The settings and route ``session`` recorded (a flag given at launch still wins).
        Another provider or endpoint than this UI's is refused: it needs its own launch."""
        recorded = session_settings.latest(session)
        resolved = session_settings.effective(
            self.options.settings,
            recorded,
            self.options.overrides,
            switch=True,
            session_id=session.id,
        )
        wanted, route = resolved.settings.provider, self.route
        name = route.provider.name if route is not None else wanted.name
        here = (name, self.options.settings.provider.base_url)
        if recorded is not None and (wanted.name, wanted.base_url) != here:
            raise UsageError(
                f"session {session.id} runs on provider {wanted.name}"
                + (f" at {redact(recorded.base_url)}" if recorded.base_url else "")
                + f"; quit and run `dsh --resume {session.id}` to open it on its own route"
            )
        if route is not None and wanted.model is not None and wanted.model != route.model:
            route = self.route_of(wanted.model, window=wanted.context_window)
        if route is not None:  # its own window (set), else the route's (asked)
            route = keep_reported(with_own_window(route, wanted.context_window), recorded)
            say_window_change(session.id, recorded, route)
        return resolved, route

    def warm_route(self) -> None:
        """Make the route's SDK client in a background thread (``dsh.llm.sdk_client.warm``):
        the app asks once a session is on screen, so the first prompt seldom waits for the
        SDK's import, and the first frame never does."""
        if self.route is not None:
            warm(self.route.provider)

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self.runner is not None:
            self.runner.close()
            self.runner = None

    def _new_policy(self) -> ApprovalPolicy:
        """A session's policy: the mode ``/approval`` chose, else ``--yes``'s ``auto``, else the
        configured one; ``--allow``'s kinds; no "always" answer yet."""
        options = self.options
        policy = approval_policy(self.settings, yes=options.yes, allow=options.allow)
        if self.chosen_approval is not None:
            policy.mode = self.chosen_approval
        policy.approver = self._approve
        return policy

    @property
    def approval(self) -> ApprovalMode:
        """The approval mode the next tool call is decided by."""
        return self.policy.mode

    def choose_approval(self, mode: ApprovalMode) -> None:
        """``/approval MODE``: decide every later tool call (the running turn's next ones too)
        by ``mode``, for the rest of this process: the sessions opened here later too, as with
        ``--yes``. Per process, like the flags: the config file is not written and the session
        does not record it (its reopen takes the mode from the flags and the config again). The
        "always" answers given so far stay."""
        self.chosen_approval = mode
        self.policy.mode = mode

    async def _approve(
        self, tool: str, args: dict[str, Any], protected: str | None
    ) -> ApprovalAnswer:
        return await self.listener.approve(tool, args, protected)

    def _observe(self, event: Event) -> None:
        items = self.projector.feed(event)
        self.cache.feed(event)
        self.progress.feed(event)
        self.listener.event_logged(event, items)

    def ensure_session(self) -> Session:
        return self._ensure_runner().session

    def _ensure_runner(self) -> SessionRunner:
        runner = self.runner
        if runner is None:
            runner = SessionRunner.create(
                self.options.store,
                self.options.workspace,
                FaceWiring(self),
                approver=self._approve,
            )
            self._adopt(runner)
            self._unsubscribe = runner.subscribe(self._observe)
        return runner

    # ---- turns ------------------------------------------------------------------------------

    @property
    def busy(self) -> str | None:
        """What runs, as the status bar says it (None: idle)."""
        activity = self.runner.activity if self.runner is not None else None
        return None if activity is None else BUSY[activity]

    def _record(self, session: Session, route: Route) -> None:
        """Log the settings this session runs with, when new or changed."""
        own, cwd = self.resolved, str(self.options.workspace)
        record_settings(session, self.settings, route, cwd, changes=own.changes, said=own.said)

    async def run_turn(self, prompt: str) -> TurnResult:
        if self.busy is not None:
            raise UsageError(f"{self.busy}; wait for it or press esc to cancel")
        assert self.route is not None, "start() resolves the route first"
        fresh = self.runner is None
        runner = self._ensure_runner()
        try:  # refused as it starts, or by its task once the attachments are read
            return await runner.start_turn(prompt)
        except PromptTooLarge:
            if fresh and not runner.session.events:  # the session this prompt created
                self._forget_new_session(runner.session.id)
            raise

    def _forget_new_session(self, session_id: str) -> None:
        """Close and remove a session created for a prompt that was refused: a session of
        nothing is not kept (the next prompt creates one, as the first one does)."""
        self.close()
        remove_kept_session(self.options.store, session_id)

    @property
    def waiting_since(self) -> float | None:
        """When the running turn's model call started, while it has produced nothing yet."""
        return self.runner.waiting_since if self.runner is not None else None

    def cancel(self, reason: str = CANCELLED_BY_USER) -> bool:
        """Cancel the running turn or ``/compact`` (a turn ends with ``reason``); False: none."""
        return self.runner is not None and self.runner.cancel(reason) is not None

    async def compact(self, focus: str | None) -> str:
        """``/compact [focus]`` on an idle session; returns the answer people see."""
        if self.busy is not None:
            return f"{self.busy}; /compact works on an idle session"
        if self.runner is None:
            return NOTHING_TO_COMPACT
        try:
            task = self.runner.start_compact(focus)
        except CompactionOff:
            return "Compaction is off (compaction.backend = off)."
        except SessionBusy as exc:
            return f"{BUSY[exc.activity]}; /compact works on an idle session"
        try:
            _, text = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the app itself is going away
            return COMPACT_CANCELLED
        return text

    async def undo(self, arg: str) -> str:
        """``/undo [--dry-run]`` on an idle session (``dsh.agent.undo``); returns the answer
        people see (a logged one, ``command/done``, reaches the transcript by itself). Its
        file reads and writes run in worker threads, the session stays on this loop
        (``SessionRunner.start_undo``): the screen stays live while the files change."""
        if arg not in ("", "--dry-run"):
            return f"/undo takes no argument but --dry-run (not {arg!r})."
        if self.busy is not None:
            return f"{self.busy}; /undo works on an idle session"
        if self.runner is None:
            return NOTHING_TO_UNDO
        try:
            task = self.runner.start_undo(dry_run=bool(arg), args=arg)
        except SessionBusy as exc:
            return f"{BUSY[exc.activity]}; /undo works on an idle session"
        return (await task).text

    @property
    def undoing(self) -> bool:
        """An ``/undo`` runs (not cancelled: quitting waits for it)."""
        return self.runner is not None and self.runner.activity == "undo"

    # ---- reading ----------------------------------------------------------------------------

    def opening_notes(self) -> list[str]:
        """What the UI says once when it opens: where tools run (``workspace_note``), the
        greeting, then what resolving the route found (a server that does not report its
        window, or one too small for the budgets)."""
        notice = self.route.notice if self.route is not None else None
        return [t for t in (workspace_note(self.options), self.options.greeting, notice) if t]

    @property
    def model(self) -> str:
        return self.route.model if self.route is not None else ""

    @property
    def window(self) -> int:
        return session_window(self.route) if self.route is not None else DEFAULT_CONTEXT_WINDOW

    def context_tokens(self) -> int:
        """The next request's size, with the system and tools the agent will send."""
        if self.session is None:
            return 0
        header = self.agent.current_header() if self.agent is not None else None
        return next_request_tokens(self.session, header)

    def sessions(self) -> list[SessionHeader]:
        """Sessions started in this workspace, oldest first."""
        here = str(self.options.workspace)
        return [h for h in self.options.store.list() if h.cwd == here]

    def recorded_elsewhere(self, session_id: str) -> str | None:
        """The workspace ``session_id`` recorded, if it is not this app's workspace."""
        header = self.options.store.header_of(session_id)
        if not isinstance(header, SessionHeader) or self.opens_here(header.cwd):
            return None
        return header.cwd

    def opens_here(self, cwd: str) -> bool:
        """Whether a session recorded in ``cwd`` opens in this app: its workspace is this one
        (else its tools would run in the wrong directory)."""
        return Path(cwd).resolve() == self.options.workspace.resolve()

    def logged_answer(self, text: str) -> bool:
        """True if ``text`` is the answer a command just logged (``command/done``)."""
        events = self.session.events if self.session is not None else ()
        last = events[-1] if events else None
        return isinstance(last, CommandDoneEvent) and last.data.text == text

    def route_of(self, model: str | None, *, window: int | None = None) -> Route:
        """The route of ``model`` (None: the configured one) in ``window`` (None: the
        route's own, which may be asked of its server: ``on_server_wait`` is told of a wait)."""
        return route_of(self._route_factory, model, window=window, waiting=self.on_server_wait)

    @property
    def resolves_off_the_loop(self) -> bool:
        """Whether resolving a route may ask a server (and wait for it to load its model):
        the app then resolves it in a thread, the screen live meanwhile."""
        factory = self._route_factory
        return isinstance(factory, SettingsRoutes) and factory.asks_servers

    def model_route(self, name: str) -> tuple[Route, str]:
        """``/model NAME``'s route and the line that says it, not used yet (``use_route``). A
        window the session set stays, and is not asked of the new model's server; else the
        new model's is (``dsh.agent.model_command.switched``)."""
        own, configured = self.settings.provider, self.options.settings.provider
        route = self.route_of(name, window=own.context_window)
        if own.context_window is not None:
            return route, switched_note(route.model, own.context_window, kept=True)
        return switched(route, own, configured, self.window)

    def use_route(self, route: Route) -> None:
        """Run the next turns on ``route``."""
        self.route = route
        if self.runner is not None:
            self.runner.reset_agent()

    def switch_model(self, name: str) -> str:
        """``/model NAME`` for the next turns (``model_route``, ``use_route``); its line."""
        route, said = self.model_route(name)
        self.use_route(route)
        return said


BUSY = {"turn": "working…", "compact": "compacting", "undo": "undoing…"}


def prompts_of(items: list[TranscriptItem]) -> list[str]:
    """The prompts people typed, oldest first (for the prompt history)."""
    return [
        item.message.text()
        for item in items
        if isinstance(item, MessageItem)
        and item.message.role == "user"
        and isinstance(item.message.source, UserSource)
    ]
