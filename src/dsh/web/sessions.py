"""Sessions the server knows about: the store, the ones open for writing here, their agents.

A session is *open* here once it was created or resumed through the API: the server then holds
its single-writer lock (the same lock as the CLI, so a session another process writes cannot be
opened, and the answer names that process), its ``Session`` object, its ``Agent`` and at most
one running activity (a turn or a manual ``/compact``; an ``/undo`` is done within its request).
Sessions not open here are read from the store, read-only (``ReadCache`` keeps the last few,
reading on what other processes append).

Each open session is a ``Handle`` (``dsh.web.handle``: its runner translated to frames, its
pending approvals). A session created here is a draft until its first prompt: open here, in
memory, written to the store by that prompt (``dsh.web.drafts``). Each session's approval mode
is the flags' and its workspace's config's unless ``/approval`` chose another
(``dsh.web.approval_mode``): each session runs with its own workspace's settings, read (in a
worker thread) before it is first opened or shown here (``dsh.web.workspace_settings``).
How agents and compaction engines are made is the ``Runtime``'s business, so tests inject the
keyless ``ScriptedProvider`` through ``WebRuntime(settings, route)``. A session's info is
``dsh.web.session_info``'s (measured against its next turn's window, ``dsh.web.next_route``);
the list's states are sent to every page as they change (``dsh.web.list_states``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from dsh.agent.session_runner import (
    NOTHING_TO_COMPACT,
    Activity,
    ActivityChanged,
    CompactionOff,
)
from dsh.agent.undo import UndoResult
from dsh.errors import SHOWN_AS_ERROR, DshError, error_line
from dsh.events import (
    AssistantMessageEvent,
    CompactionEndEvent,
    Event,
)
from dsh.store import EventStore, SessionHeader
from dsh.surface import Session
from dsh.tools.approval import ApprovalAnswer
from dsh.transcript.history import HistoryPage, history_page
from dsh.web.approval_mode import ApprovalModes
from dsh.web.drafts import Drafts
from dsh.web.errors import (
    APPROVAL_NOT_FOUND,
    COMPACTION_DISABLED,
    INTERNAL,
    NOT_RUNNING,
    SESSION_BUSY,
    SESSION_NOT_OPEN,
    ApiError,
    bad_request,
    from_dsh_error,
)
from dsh.web.follow import lock_holder
from dsh.web.handle import Handle
from dsh.web.list_states import ListStates
from dsh.web.live import LiveHub, frame
from dsh.web.next_route import ready_handle
from dsh.web.read_cache import ContextFolds, ReadCache
from dsh.web.runtime import Runtime
from dsh.web.session_info import open_figures, session_info
from dsh.web.titles import SessionIndex
from dsh.web.warning_feed import WarningFeed, warn_for_session
from dsh.web.workspace_settings import new_policy, read_settings

log = logging.getLogger("dsh.web")

T = TypeVar("T")

CANCELLED_BY_SHUTDOWN = "cancelled because dsh web stopped (Ctrl-C, SIGTERM or SIGHUP)"
"""Why a turn running when the server stops ends: not a person's Stop on its page."""

SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_session_id(session_id: str) -> str:
    """A session id as it may appear in a URL (no path tricks); 400 otherwise."""
    if not SESSION_ID.match(session_id) or ".." in session_id:
        raise bad_request(f"{session_id!r} is not a valid session id")
    return session_id


class SessionRegistry:
    def __init__(
        self,
        store: EventStore,
        runtime: Runtime,
        *,
        default_cwd: Path,
        warnings: WarningFeed | None = None,
    ) -> None:
        self.store = store
        self.runtime = runtime
        self.default_cwd = default_cwd
        self.handles: dict[str, Handle] = {}
        self.hubs: dict[str, LiveHub] = {}
        self.warnings = warnings if warnings is not None else WarningFeed()
        """dsh's warnings, kept and sent to the pages (the sessions' to their live streams)."""
        self.warnings.deliver_to(self.hubs)
        runtime.route_waits.deliver_to(self.warnings.server)  # a server loading its model
        self.readers = ReadCache(store, on_load=self._loaded)
        self.titles = SessionIndex(store)
        """The session list's titles, last activity and writers."""
        self.stored_context = ContextFolds(self.readers.size)
        """The context panel's and the session info's folds of read-only sessions."""
        self._opening = asyncio.Lock()
        self.drafts = Drafts()
        """New sessions created here that no prompt has written to the store yet."""
        self.approval_modes = ApprovalModes()
        """The modes ``/approval`` chose, by session."""
        self.next_routes = runtime.next_routes
        """The route each session's next turn here runs on, as far as resolved."""
        self.list_states = ListStates(store, self.warnings.server, self.handles)
        """The session list's states, sent to every page as they change."""

    def _loaded(self, session_id: str, session: Session) -> None:
        """A read-only load's warnings, to the session's pages, unless another live process
        holds its writer lock: then a last line without its newline is being written, not
        torn (it shows once its newline lands)."""
        if session.warnings and lock_holder(self.store, session_id) is None:
            warn_for_session(session_id, session.warnings)

    # -- lookup ----------------------------------------------------------------------------

    def hub(self, session_id: str) -> LiveHub:
        hub = self.hubs.get(session_id)
        if hub is None:
            hub = self.hubs[session_id] = LiveHub(session_id)
            with contextlib.suppress(RuntimeError):
                hub.bind_loop()
        return hub

    def open_handle(self, session_id: str) -> Handle:
        """The handle of a session open here; 409 if it exists but is not open, else 404."""
        handle = self.handles.get(check_session_id(session_id))
        if handle is not None:
            return handle
        raise ApiError(
            409,
            SESSION_NOT_OPEN,
            f"session {session_id} is not open for writing here; POST .../resume first",
        )

    async def require_open(self, session_id: str) -> Handle:
        if check_session_id(session_id) not in self.handles:
            await self._read(session_id)  # 404 for an unknown session
        return self.open_handle(session_id)

    async def _read(self, session_id: str) -> tuple[SessionHeader, Sequence[Event]]:
        """Header and events: from the open session, else read-only from the store (a copy of
        its events as they stood: the kept session goes on growing)."""
        handle = self.handles.get(check_session_id(session_id))
        if handle is not None:
            return handle.session.header, handle.session.events
        return await self.stored(session_id, lambda session: (session.header, [*session.events]))

    async def stored(self, session_id: str, read: Callable[[Session], T]) -> T:
        """``read`` of the stored session brought up to date, on a worker thread that holds
        it: nothing is folded into it while ``read`` runs (``ReadCache.held``)."""

        def held() -> T:
            with self.readers.held(session_id) as session:
                return read(session)

        try:
            return await anyio.to_thread.run_sync(held)
        except DshError as exc:
            raise from_dsh_error(exc) from exc

    async def events(self, session_id: str) -> Sequence[Event]:
        return (await self._read(session_id))[1]

    async def workspace(self, session_id: str) -> Path:
        """The workspace the session recorded (its header's ``cwd``); 404 for an unknown one."""
        handle = self.handles.get(check_session_id(session_id))
        if handle is not None:
            return Path(handle.session.header.cwd)
        return Path(await self.stored(session_id, lambda session: session.header.cwd))

    # -- reading ---------------------------------------------------------------------------

    async def list_sessions(self) -> list[dict[str, Any]]:
        """Every stored session's row, last active first as in the terminal UI's picker, with
        its title, last activity and writer (``SessionIndex.annotate``); their states then
        follow (``ListStates``)."""
        try:
            headers = await anyio.to_thread.run_sync(self.store.list)
        except DshError as exc:
            raise from_dsh_error(exc) from exc
        rows = [self.summary(h) for h in headers]
        rows = await anyio.to_thread.run_sync(self.titles.annotate, rows, headers)
        rows.sort(key=lambda row: (row["updatedAt"], row["createdAt"], row["id"]), reverse=True)
        self.list_states.listed(rows)  # the sessions whose states the pages hear of
        return rows

    def summary(self, header: SessionHeader) -> dict[str, Any]:
        handle = self.handles.get(header.id)
        row: dict[str, Any] = {
            "id": header.id,
            "cwd": header.cwd,
            "createdAt": header.created_at,
            "open": handle is not None,
            "running": handle.activity if handle is not None else None,
        }
        if header.parent_session is not None:
            row["parentSession"] = header.parent_session
        return row

    async def info(self, session_id: str) -> dict[str, Any]:
        """Everything the page header needs about one session (``dsh.web.session_info``)."""
        return await session_info(self, check_session_id(session_id))

    def stats(self, handle: Handle) -> dict[str, Any]:
        """The session info's figures of an open session (``dsh.web.session_info``)."""
        return open_figures(self, handle)

    async def history(
        self, session_id: str, before_seq: int | None, max_messages: int
    ) -> tuple[HistoryPage, int]:
        """A history page (``history_page`` of ``dsh.transcript.history``; docs/architecture.md,
        "The human transcript") and the session's last seq."""
        handle = self.handles.get(check_session_id(session_id))
        if handle is not None:
            events = handle.session.events
            return history_page(events, before_seq, max_messages), len(events) - 1
        return await self.stored(
            session_id,
            lambda session: (
                history_page(session.events, before_seq, max_messages),
                len(session.events) - 1,
            ),
        )

    # -- opening and closing ---------------------------------------------------------------

    async def create(self, cwd: Path) -> Handle:
        """A new session in ``cwd``, open here as a draft: the store has it once its first
        prompt wrote it (``dsh.web.drafts``). It runs with ``cwd``'s own settings."""
        await read_settings(self.runtime, cwd)
        handle = self._adopt(self.drafts.create(cwd), draft=True)
        self._status(handle)
        return handle

    def _written(self, handle: Handle) -> Handle:
        """The handle of ``handle``'s session in the store: a draft is written there (same id,
        creation time and workspace) and opened here in its place; its pages, on the same live
        stream, see nothing change but the session list."""
        if not handle.draft:
            return handle
        session = self.drafts.write(self.store, handle.session)
        for unsubscribe in handle.watchers:
            unsubscribe()
        self.handles.pop(session.id, None)
        return self._adopt(session)

    async def resume(self, session_id: str) -> Handle:
        """Open a stored session for writing here (idempotent for one already open here), with
        its own workspace's settings."""
        check_session_id(session_id)
        if session_id not in self.handles:  # its header alone (the open below says what is wrong)
            header = await anyio.to_thread.run_sync(self.store.header_of, session_id)
            if isinstance(header, SessionHeader):
                await read_settings(self.runtime, header.cwd)
        async with self._opening:  # two resumes at once must not race for the lock
            handle = self.handles.get(session_id)
            if handle is not None:
                return handle
            try:
                session = await anyio.to_thread.run_sync(
                    lambda: Session.open(self.store, session_id, writable=True)
                )
            except DshError as exc:
                raise from_dsh_error(exc) from exc
            warn_for_session(session_id, session.warnings)  # e.g. a torn tail moved aside
            self.readers.forget(session_id)
            handle = self._adopt(session)
            if session.repaired_from is not None:  # what the open closed: pages watching see it
                for event in session.events[session.repaired_from :]:
                    handle.hub.on_event(event)
            self._status(handle)
            return handle

    def _adopt(self, session: Session, *, draft: bool = False) -> Handle:
        handle = Handle(session, self.hub(session.id), self.runtime, draft=draft)
        handle.runner.approval_mode = self.approval_modes.chosen.get(session.id)
        handle.runner.on_activity(lambda change: self._activity_changed(handle, change))
        self.handles[session.id] = handle

        def stats_on(event: Event) -> None:  # context use moves with these
            if isinstance(event, AssistantMessageEvent | CompactionEndEvent):
                handle.hub.publish(frame("stats", stats=self.stats(handle)))

        handle.watchers.append(session.subscribe(stats_on))
        return handle

    def close(self, session_id: str) -> None:
        handle = self.open_handle(session_id)
        self.ensure_idle(handle)
        self._release(handle)
        self._status(handle, open_=False)

    def _release(self, handle: Handle) -> None:
        for unsubscribe in handle.watchers:
            unsubscribe()
        self.handles.pop(handle.session.id, None)
        if handle.draft:
            self.drafts.forget(handle.session)  # nothing of it was kept: nothing stays
        else:
            handle.session.close()

    async def shutdown(self, timeout: float = 5.0) -> None:
        """Stop what runs (turns are cancelled cleanly, so their logs stay balanced) and
        release every writer lock."""
        tasks = []
        for handle in list(self.handles.values()):
            task = handle.runner.task
            if task is not None:
                handle.runner.cancel(CANCELLED_BY_SHUTDOWN)
                tasks.append(task)
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        for handle in list(self.handles.values()):
            with contextlib.suppress(DshError):
                self._release(handle)

    # -- activities --------------------------------------------------------------------------

    def ensure_idle(self, handle: Handle) -> None:
        if handle.activity is not None:
            what = "a turn" if handle.activity == "turn" else "a /compact"
            raise ApiError(
                409,
                SESSION_BUSY,
                f"{what} is already running in session {handle.session.id}; wait or cancel it",
                running=handle.activity,
            )

    async def start_prompt(self, session_id: str, text: str) -> Handle:
        """Start a turn. Its session's first one here starts the MCP servers its tools come
        from in a worker thread (they may take seconds; the other sessions go on meanwhile),
        and each one has the route it runs on resolved in a worker thread too (a session on
        another model than the server's may ask its server: ``next_route.ready_handle``). A
        draft's first prompt writes it to the store, once the route resolved (no key: 503, and
        nothing written). The files the prompt's ``@path`` mentions attach are read (in a
        worker thread) before it answers, so a prompt they make too large is a 413 too."""
        handle = self.open_handle(session_id)
        self.ensure_idle(handle)
        try:
            building = handle.runner.agent is None  # a new agent asks its server afresh
            if building:
                await anyio.to_thread.run_sync(self.runtime.mcp_start(handle.session))
            handle = await ready_handle(self, session_id, fresh=building)  # closed, busy: 409
            # what its @path mentions attach counts against the window: read before the 202
            attached = await handle.runner.read_attachments(text)
            handle = await ready_handle(self, session_id, fresh=False)  # and while read
            if handle.draft:  # a prompt that cannot run does not write the draft
                handle.runner.check_prompt(text, attached)
            handle = self._written(handle)
            task = handle.runner.start_turn(text, attached)
        except DshError as exc:
            raise from_dsh_error(exc) from exc
        task.add_done_callback(_retrieved)
        return handle

    async def start_compact(self, session_id: str, focus: str | None) -> str | None:
        """Start ``/compact`` on the route resolved first in a worker thread (as a turn's);
        None, or a draft's answer (there is nothing to compact before the first prompt, and
        nothing is logged: the terminal UI's answer then)."""
        handle = self.open_handle(session_id)
        self.ensure_idle(handle)
        if handle.draft:
            return NOTHING_TO_COMPACT
        try:
            handle = await ready_handle(self, session_id, fresh=True)
            task = handle.runner.start_compact(focus)
        except CompactionOff as exc:
            raise ApiError(409, COMPACTION_DISABLED, error_line(str(exc))) from exc
        except DshError as exc:
            raise from_dsh_error(exc) from exc
        task.add_done_callback(_retrieved)
        return None

    def undo(self, session_id: str, *, dry_run: bool) -> tuple[UndoResult, bool]:
        """``/undo`` (``dsh.agent.undo``) and whether it logged anything; 409 while anything
        runs. On the loop, as every use of an open ``Session`` (not thread-safe: the page's
        reads would race its appends); it is a few small files' reads, writes and fsyncs."""
        handle = self.open_handle(session_id)
        self.ensure_idle(handle)
        before = len(handle.session.events)
        try:
            result = handle.runner.undo(dry_run=dry_run)
        except DshError as exc:
            raise from_dsh_error(exc) from exc
        logged = len(handle.session.events) > before
        if logged:  # its note to the model is in the next request: context use moved
            handle.hub.publish(frame("stats", stats=self.stats(handle)))
        return result, logged

    # -- /approval ------------------------------------------------------------------------------

    async def approval(self, session_id: str, workspace: str) -> dict[str, Any]:
        """``{mode, allow}``: the approval mode of the session (in ``workspace``) and
        ``--allow``'s kinds."""
        return self.approval_modes.public(session_id, await new_policy(self.runtime, workspace))

    async def shown_approval(self, session_id: str) -> dict[str, Any]:
        """``/approval``: the mode, and the line that says it; 404 for an unknown session."""
        policy = await new_policy(self.runtime, await self.workspace(session_id))
        return self.approval_modes.shown(session_id, policy)

    def choose_approval(self, session_id: str, arg: str) -> dict[str, Any]:
        """``/approval ARG`` on an open session: its running turn's next calls and its later
        turns are decided by that mode; its pages hear ``approval-mode``."""
        handle = self.open_handle(session_id)
        policy = self.runtime.new_policy(handle.session.header.cwd)  # read as it was opened
        chosen = self.approval_modes.choose(session_id, arg, policy)
        handle.runner.choose_approval(chosen["mode"])
        now = {"mode": chosen["mode"], "allow": chosen["allow"]}
        handle.hub.publish(frame("approval-mode", approval=now))
        return chosen

    def cancel(self, session_id: str) -> Activity:
        handle = self.open_handle(session_id)
        activity = handle.runner.cancel()
        if activity is None:
            raise ApiError(409, NOT_RUNNING, f"nothing is running in session {session_id}")
        return activity

    def answer(self, session_id: str, approval_id: str, answer: ApprovalAnswer) -> None:
        handle = self.handles.get(check_session_id(session_id))
        pending = handle.approvals.get(approval_id) if handle is not None else None
        if pending is None or pending.future.done():
            raise ApiError(
                404,
                APPROVAL_NOT_FOUND,
                f"no pending approval {approval_id!r} in session {session_id}",
            )
        if answer == "always" and pending.protected is not None:
            raise bad_request(
                f"this call is asked every time, so it takes no always: {pending.protected}"
            )
        pending.future.set_result(answer)

    def _activity_changed(self, handle: Handle, change: ActivityChanged) -> None:
        """The runner's activity, as frames: errors, then stats and status when it ends."""
        if change.running:
            self._status(handle)
            return
        error = change.error
        what = "the turn" if change.activity == "turn" else "/compact"
        if isinstance(error, DshError):
            self._report(handle, from_dsh_error(error))
        elif isinstance(error, Exception):
            log.error(  # the page shows it as its error (below): listed, not toasted again
                "%s failed in session %s: %s",
                what,
                handle.session.id,
                error_line(error),
                exc_info=error,
                extra={SHOWN_AS_ERROR: True},
            )
            self._report(handle, ApiError(500, INTERNAL, f"{what} failed: {error_line(error)}"))
        if handle.session.id in self.handles:
            handle.hub.publish(frame("stats", stats=self.stats(handle)))
        self._status(handle)

    def _report(self, handle: Handle, error: ApiError) -> None:
        handle.hub.publish(frame("error", error=error.body()["error"]))

    def _status(self, handle: Handle, *, open_: bool = True) -> None:
        handle.hub.publish(frame("status", running=handle.activity, open=open_))
        self.list_states.changed(handle.session.id, open_=open_, running=handle.activity)


# ---- helpers --------------------------------------------------------------------------------


def _retrieved(task: asyncio.Task[Any]) -> None:
    """The runner reported the outcome as frames; mark a task's exception as seen."""
    if not task.cancelled():
        task.exception()
