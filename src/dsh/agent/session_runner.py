"""One open session and what runs in it, for every face: the TUI and the web translate it to
widgets and to HTTP/WebSocket frames, and keep nothing of it themselves.

A ``SessionRunner`` holds a writable session, its agent (made on the first turn), and at most one
activity: a turn, a manual ``/compact``, or an ``/undo`` started as a task (``start_undo``, the
terminal UI's: its file work in worker threads). Starting one while another runs raises
``SessionBusy`` at once (before anything is logged); ``cancel`` stops what runs the way it must
stop: a turn cooperatively (the loop closes its log entries), a ``/compact`` by cancelling its
task (the command answers its own ``command/run``, see ``run_compact_command``); an ``/undo`` is
not stopped (its files and its log must agree; it takes a moment). Approvals are a
callback the face supplies; subscribers hear every appended event and every activity change.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import msgspec

from dsh.agent import session_settings
from dsh.agent.asked_window import keep_reported, say_window_change, with_own_window
from dsh.agent.cancel import CANCELLED_BY_USER
from dsh.agent.loop import Agent, StreamListener, TurnResult
from dsh.agent.mcp_servers import start_session_mcp_servers
from dsh.agent.mentions import Attachment
from dsh.agent.runtime import Route, approval_policy
from dsh.agent.settings_record import record_settings
from dsh.agent.undo import UndoResult, undo_last_turn, undo_last_turn_in_threads
from dsh.agent.wiring import build_agent, build_parts, session_window
from dsh.compaction import (
    COMPACT_CANCELLED,
    NOTHING_TO_COMPACT,
    CompactionEngine,
    nothing_to_compact,
    run_compact_command,
)
from dsh.config import Settings
from dsh.errors import UsageError
from dsh.events import Event, SessionSettings
from dsh.store import EventStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalMode, ApprovalPolicy, Approver
from dsh.tools.base import ToolKind

__all__ = [
    "COMPACT_CANCELLED",
    "NOTHING_TO_COMPACT",
    "ActivityChanged",
    "CompactionEngine",
    "CompactionOff",
    "SessionBusy",
    "SessionRunner",
    "SessionWiring",
    "SettingsWiring",
    "record_settings",
]
"""The answers and the engine type a face translates come from here, not from compaction."""

Activity = Literal["turn", "compact", "undo"]
T = TypeVar("T")


class SessionBusy(UsageError):
    """Something already runs in the session."""

    def __init__(self, activity: Activity) -> None:
        what = {"turn": "a turn", "compact": "a /compact", "undo": "an /undo"}[activity]
        super().__init__(f"{what} is already running; wait for it or cancel it")
        self.activity: Activity = activity


class CompactionOff(UsageError):
    """``/compact`` with ``compaction.backend = off``."""

    def __init__(self) -> None:
        super().__init__("compaction.backend is off; nothing can compact")


class SessionWiring(Protocol):
    """How a runner gets its agent, its compaction engine and its window (tests inject)."""

    def make_agent(
        self, session: Session, *, on_stream: StreamListener, approver: Approver
    ) -> Agent: ...

    def make_engine(self, session: Session) -> CompactionEngine | None: ...

    def compact_window(self, session: Session) -> int: ...


class SettingsWiring:
    """The real wiring: ``build_agent`` / ``build_parts`` on the session's own settings (what it
    recorded, else these settings) and the route ``route()`` gives at the time (a face may switch
    models between turns); a session recorded on another model is resolved with ``reroute``.

    ``overrides`` are the flags the face was started with (``{"provider": {...}}``, already
    merged into ``settings``): they win over what a session recorded, as ``dsh run --session``'s
    do; the ``record_settings`` that logs such a change says it in one warning.

    ``yes`` and ``allow`` are the face's approval flags (``--yes``, ``--allow``): each agent's
    policy is ``approval_policy``'s over the session's settings (a session does not record
    them)."""

    def __init__(
        self,
        settings: Settings,
        route: Callable[[], Route],
        *,
        reroute: Callable[[Settings], Route] | None = None,
        recorded_wins: bool = True,
        overrides: Mapping[str, Mapping[str, Any]] | None = None,
        yes: bool = False,
        allow: frozenset[ToolKind] = frozenset(),
    ) -> None:
        self.settings = settings
        self.yes = yes
        self.allow = allow
        self._route_of = route
        self._reroute = reroute
        self._recorded_wins = recorded_wins
        """False: ``settings`` and ``route`` are already the session's own (resolved by the
        face with its flags), so the recorded ones are not applied again."""
        self._overrides = overrides or {}

    def route(self) -> Route:
        return self._route_of()

    def base(self, workspace: str) -> Settings:
        """The configured settings (flags in) of a session in ``workspace`` (``dsh web``'s own)."""
        return self.settings

    def own_settings(self, session: Session) -> Settings:
        """The settings ``session`` runs with: the flags, then its recorded ones, over ``base``."""
        recorded = session_settings.latest(session) if self._recorded_wins else None
        return self._effective(session.id, recorded, session.header.cwd).settings

    def _effective(
        self, session_id: str | None, recorded: SessionSettings | None, workspace: str
    ) -> session_settings.Resolved:
        base, flags = self.base(workspace), self._overrides
        return session_settings.effective(base, recorded, flags, switch=True, session_id=session_id)

    def own(self, session: Session) -> tuple[Settings, Route]:
        """The settings and route ``session`` runs with: the flags, then its recorded ones, win
        over the configured (an older log without them gets the configured)."""
        resolved, route = self._own(session)
        return resolved.settings, route

    def chosen_route(self, session_id: str) -> Route | None:
        """The route a face chose for ``session_id``'s next turns (the web's ``/model NAME``),
        if any; none here."""
        return None

    def _own(self, session: Session) -> tuple[session_settings.Resolved, Route]:
        recorded = session_settings.latest(session) if self._recorded_wins else None
        return self._own_of(session.id, recorded, session.header.cwd)

    def _own_of(
        self, session_id: str, recorded: SessionSettings | None, workspace: str, *, say: bool = True
    ) -> tuple[session_settings.Resolved, Route]:
        """``_own`` of ``session_id`` (in ``workspace``, latest record ``recorded``) read apart
        (on a face's loop, its route in a worker thread); ``say``: False warns of nothing."""
        resolved = self._effective(session_id if say else None, recorded, workspace)
        chosen = self.chosen_route(session_id)
        if chosen is not None:  # its own settings with the chosen model and window
            provider = msgspec.structs.replace(
                resolved.settings.provider,
                model=chosen.model,
                context_window=chosen.context_window,
            )
            settings = msgspec.structs.replace(resolved.settings, provider=provider)
            return dataclasses.replace(resolved, settings=settings), chosen
        route = self.route()
        if recorded is None:
            return resolved, route
        wanted = resolved.settings.provider
        moved = (wanted.name, wanted.model) != (route.provider.name, route.model) or (
            wanted.base_url != self.settings.provider.base_url  # what ``route`` was built for
        )
        if moved and self._reroute is not None:
            route = self._reroute(resolved.settings)
        route = keep_reported(with_own_window(route, wanted.context_window), recorded)
        if say:
            say_window_change(session_id, recorded, route)
        return resolved, route

    def new_policy(self, workspace: str) -> ApprovalPolicy:
        """A policy as the flags and ``workspace``'s configured mode make it (no "always")."""
        return approval_policy(self.base(workspace), yes=self.yes, allow=self.allow)

    def make_agent(
        self, session: Session, *, on_stream: StreamListener, approver: Approver
    ) -> Agent:
        settings, route = self.own(session)
        policy = approval_policy(settings, yes=self.yes, allow=self.allow)
        policy.approver = approver
        agent = build_agent(
            session,
            settings,
            route,
            workspace=Path(session.header.cwd),
            policy=policy,
            on_stream=on_stream,
        )
        return agent  # its settings are logged by the turn it runs (a refused prompt: none)

    def mcp_start(self, session: Session) -> Callable[[], None]:
        """The start of the MCP servers ``session``'s agent will use, to run off the face's
        event loop (it blocks while they start; ``make_agent`` then finds them started). Made
        on the loop: it reads the session."""
        settings, workspace = self.own_settings(session), Path(session.header.cwd)
        return lambda: start_session_mcp_servers(settings, workspace)

    def make_engine(self, session: Session) -> CompactionEngine | None:
        settings, route = self.own(session)
        return build_parts(settings, route, session, mcp=False).engine  # it calls no tool

    def compact_window(self, session: Session) -> int:
        return session_window(self.own(session)[1])

    def record_settings_of(self, session: Session) -> None:
        """Log the settings what starts now (a turn, a ``/compact``) runs with, when new or
        changed, saying what the flags changed of the recorded ones as it logs them; a route a
        face chose (``chosen_route``) is what runs, so it is what is logged."""
        resolved, route = self._own(session)
        record_settings(
            session, resolved.settings, route, changes=resolved.changes, said=resolved.said
        )


@dataclass(frozen=True, slots=True)
class ActivityChanged:
    """``activity`` started (``running``) or ended (``error`` when it raised)."""

    activity: Activity
    running: bool
    error: BaseException | None = None


RunnerListener = Callable[[ActivityChanged], None]


class SessionRunner:
    def __init__(
        self,
        session: Session,
        wiring: SessionWiring,
        *,
        approver: Approver,
        on_stream: StreamListener | None = None,
    ) -> None:
        self.session = session
        self.wiring = wiring
        self.approver = approver
        self.on_stream: StreamListener = on_stream or (lambda event: None)
        self.agent: Agent | None = None
        self._turn_agent: Agent | None = None
        """The agent of the running turn (``reset_agent`` may have replaced ``agent`` since)."""
        self.activity: Activity | None = None
        self.task: asyncio.Task[Any] | None = None
        self._turn_begun = False
        """The turn's loop has begun (its attachments read, its prompt checked, its settings
        logged): before that, a cancel cancels its task, which has logged nothing."""
        self._listeners: list[RunnerListener] = []
        self.approval_mode: ApprovalMode | None = None
        """The mode ``choose_approval`` chose (None: the one the wiring's policy has)."""

    @classmethod
    def create(
        cls, store: EventStore, cwd: Path | str, wiring: SessionWiring, **options: Any
    ) -> SessionRunner:
        return cls(Session.create(store, cwd=cwd), wiring, **options)

    @classmethod
    def open(
        cls, store: EventStore, session_id: str, wiring: SessionWiring, **options: Any
    ) -> SessionRunner:
        """Open a stored session for writing (its single-writer lock)."""
        return cls(Session.open(store, session_id, writable=True), wiring, **options)

    def close(self) -> None:
        self.session.close()

    # ---- subscribers --------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Hear every event appended to the session; returns the unsubscribe."""
        return self.session.subscribe(listener)

    def on_activity(self, listener: RunnerListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _tell(self, change: ActivityChanged) -> None:
        for listener in list(self._listeners):
            listener(change)

    # ---- activities ---------------------------------------------------------------------------

    def ensure_agent(self) -> Agent:
        if self.agent is None:
            agent = self.wiring.make_agent(
                self.session, on_stream=self.on_stream, approver=self.approver
            )
            if self.approval_mode is not None:
                agent.policy.mode = self.approval_mode
            self.agent = agent
        return self.agent

    def choose_approval(self, mode: ApprovalMode) -> None:
        """``/approval MODE``: every later tool call of this runner's agents is decided by
        ``mode`` (the running turn's next ones too; the agent made for the next turn too); the
        "always" answers given so far stay."""
        self.approval_mode = mode
        for agent in (self.agent, self._turn_agent):
            if agent is not None:
                agent.policy.mode = mode

    def reset_agent(self) -> None:
        """The next turn gets a new agent (another model); a running turn keeps its own."""
        self.agent = None

    def start_turn(
        self, prompt: str, attached: Sequence[Attachment] | None = None
    ) -> asyncio.Task[TurnResult]:
        """Run one turn as a task; ``SessionBusy`` if something runs, the wiring's error, or
        ``PromptTooLarge`` for a prompt no request can carry (``Agent.check_prompt``) — each
        raised here, before anything is logged, so the face still holds the prompt. What the
        prompt's ``@path`` mentions attach counts too: ``attached`` (``read_attachments``) is
        checked here and sent as read; without it the task reads them, and a refusal is the
        task's ``PromptTooLarge``, still before anything is logged."""
        self._ensure_idle()
        agent = self.ensure_agent()
        agent.check_prompt(prompt, attached or ())  # the text now; attachments read: both
        self._turn_agent = agent
        return self._start("turn", self._checked_turn(agent, prompt, attached))

    async def _checked_turn(
        self, agent: Agent, prompt: str, attached: Sequence[Attachment] | None
    ) -> TurnResult:
        """The turn, after its prompt and attachments passed the check (read here when the face
        did not) and the settings it runs with were logged: a refused prompt logs nothing."""
        if attached is None:  # start_turn checked the text alone: now with what it attaches
            attached = await _attachments_of(agent, prompt)
            agent.check_prompt(prompt, attached)
        self._record_settings()
        self._turn_begun = True  # from here a cancel is the loop's to close (``cancel``)
        return await agent.run_turn(prompt, attached)

    async def read_attachments(self, prompt: str) -> tuple[Attachment, ...]:
        """What ``prompt``'s ``@path`` mentions would attach in this session's next turn, read
        in a worker thread: a face that must refuse a prompt before it answers reads them
        first, then passes them to ``start_turn`` (which still refuses a turn started
        meanwhile: ``SessionBusy``)."""
        return await _attachments_of(self.ensure_agent(), prompt)

    def check_prompt(self, prompt: str, attached: Sequence[Attachment] = ()) -> None:
        """``PromptTooLarge`` for a prompt (with what it attaches) no request of this session
        can carry, logging nothing (a face checks a prompt before it writes a session for it)."""
        self.ensure_agent().check_prompt(prompt, attached)

    def _record_settings(self) -> None:
        """Log the settings what starts now runs with (when new or changed)."""
        record = getattr(self.wiring, "record_settings_of", None)
        if record is not None:  # test wirings record nothing
            record(self.session)

    def start_compact(
        self, focus: str | None, *, log_nothing: bool = True
    ) -> asyncio.Task[tuple[bool, str]]:
        """Run ``/compact [focus]`` as a task; returns (ok, the answer people see). With
        ``log_nothing=False`` a call that finds nothing to compact appends nothing."""
        self._ensure_idle()
        engine = self.wiring.make_engine(self.session)
        if engine is None:
            raise CompactionOff()
        window = self.wiring.compact_window(self.session)
        if not log_nothing and (said := nothing_to_compact(engine, window=window, focus=focus)):
            return self._start("compact", _answer(True, said))
        return self._start("compact", self._compact(engine, window, focus))

    async def _compact(
        self, engine: CompactionEngine, window: int, focus: str | None
    ) -> tuple[bool, str]:
        """The command, after logging the settings it runs with (a command cancelled before it
        ran logs nothing)."""
        self._record_settings()
        return await run_compact_command(engine, window=window, focus=focus)

    def undo(self, *, dry_run: bool = False, args: str = "") -> UndoResult:
        """``/undo``: take back the last turn's file changes (``dsh.agent.undo``), blocking
        file I/O on the calling thread; ``SessionBusy`` while a turn or a ``/compact`` runs."""
        self._ensure_idle()
        return undo_last_turn(self.session, dry_run=dry_run, args=args)

    def start_undo(self, *, dry_run: bool = False, args: str = "") -> asyncio.Task[UndoResult]:
        """``/undo`` as a task: its file reads and writes in worker threads, the session
        touched only on this loop (``undo_last_turn_in_threads``); a turn or a ``/compact``
        started meanwhile is refused (``SessionBusy``, as this is while they run). ``cancel``
        leaves it alone."""
        self._ensure_idle()
        return self._start(
            "undo", undo_last_turn_in_threads(self.session, dry_run=dry_run, args=args)
        )

    def cancel(self, reason: str = CANCELLED_BY_USER) -> Activity | None:
        """Stop what runs (None if nothing does, or an ``/undo``, which is let finish); a turn
        ends with ``reason`` as its error."""
        activity, task = self.activity, self.task
        if activity is None or task is None or activity == "undo":
            return None  # an undo is not stopped half way (``start_undo``)
        if activity == "turn" and self._turn_agent is not None and self._turn_begun:
            self._turn_agent.cancel(reason)  # a turn that never began has nothing to close
        else:
            task.cancel()
        return activity

    @property
    def waiting_since(self) -> float | None:
        """When the running turn's model call started, while it has produced nothing yet."""
        if self.activity != "turn" or self._turn_agent is None:
            return None
        return self._turn_agent.waiting_since

    def _ensure_idle(self) -> None:
        if self.activity is not None:
            raise SessionBusy(self.activity)

    def _start(self, activity: Activity, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        self.activity = activity
        self._turn_begun = False
        task = asyncio.get_running_loop().create_task(self._run(activity, work))
        self.task = task

        def cancelled_before_it_ran(_: asyncio.Task[T]) -> None:
            if self.task is task:  # its body never ran, so nothing was logged
                work.close()
                self._release(activity, asyncio.CancelledError())

        task.add_done_callback(cancelled_before_it_ran)
        self._tell(ActivityChanged(activity, running=True))
        return task

    async def _run(self, activity: Activity, work: Coroutine[Any, Any, T]) -> T:
        error: BaseException | None = None
        try:
            return await work
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._release(activity, error)

    def _release(self, activity: Activity, error: BaseException | None) -> None:
        self.activity = None
        self.task = None
        self._turn_agent = None
        self._tell(ActivityChanged(activity, running=False, error=error))


async def _attachments_of(agent: Agent, prompt: str) -> tuple[Attachment, ...]:
    """``agent.attachments`` in a worker thread (blocking reads)."""
    return await asyncio.to_thread(agent.attachments, prompt)


async def _answer(ok: bool, text: str) -> tuple[bool, str]:
    return ok, text
