"""Follow a session that another process writes (``dsh run``, the TUI, another ``dsh web``).

While a page watches a session that is not open for writing here, a ``Follower`` reads its log
on every ``POLL_SECONDS`` with a ``LogFollow``: the store's ``AppendedReader``
(``dsh.store.appended``, the reader the read cache catches up with), so a read costs what was
appended, not the log's length, a line still being written waits for its newline, and a log
replaced, cut back or changed in place is read again from its start (or refused as a load
refuses it). It publishes each event past the last one its pages have exactly as the writer's
own observer would, so the page cannot tell a local writer from a remote one. It
also reads the writer lock's holder pid and publishes ``{"kind": "holder", "pid": N | null}``
when it changes; the page shows "busy in another process" and disables its composer meanwhile.

The reply a model call of that process is streaming is not in the log until it is whole, so
the follower also reads the session's side file (``dsh.agent.live_text``, in the store's home)
on each poll and publishes its deltas as the ``delta`` frames the page gets for a turn run
here: only once the events it published reach the call's start, never for a call the log has
already ended (its reply is on the page, which drops the streamed text when the reply comes:
no text twice) nor one whose writer is gone. A page that joins during the call gets the
deltas published of it so far first (``Follower.joined``, ``dsh.web.live.joined_mid_call``).
A follower stops when the session's last subscriber leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from dsh.agent.live_text import LiveTextTail
from dsh.errors import DshError
from dsh.events import Event
from dsh.store import EventStore, SessionHeader
from dsh.store.appended import LogPosition, reader_for
from dsh.store.derived import live_text_path
from dsh.store.live_file import CALL_ENDS, Delta, LiveCall
from dsh.store.locking import live_holder, session_holder
from dsh.web.live import LiveHub, Streamed, frame

if TYPE_CHECKING:
    from dsh.web.sessions import SessionRegistry

log = logging.getLogger("dsh.web")

POLL_SECONDS = 0.025


def lock_holder(store: Any, session_id: str) -> int | None:
    """The pid of another live process holding the session's writer lock (the store's
    ``lock_path``: a JSONL session's directory, a SQLite database's ``locks/``; a memory store
    has none), as the pickers find it (``session_holder``): a recorded pid that is alive is
    checked against the flock itself, so neither a crashed writer's pid nor one since reused by
    an unrelated process shows the session busy. The session list's states, the info's
    ``heldBy`` and the follower's ``holder`` frames all read it here."""
    holder = session_holder(store, session_id)
    return None if holder is None else holder.pid


class _Past:
    """An ``EventSink`` that keeps the events past ``seq`` (a read from the log's start hands on
    the ones the pages have already too), and the seq of the last model call end read."""

    def __init__(self, seq: int, last_end: int) -> None:
        self.seq = seq
        self.last_end = last_end
        self.events: list[Event] = []

    def restart(self) -> None:
        self.events = []
        self.last_end = -1

    def add(self, events: Sequence[Event]) -> None:
        for event in reversed(events):
            if isinstance(event, CALL_ENDS):
                self.last_end = max(self.last_end, event.seq)
                break
        if events and events[-1].seq > self.seq:
            self.events += [event for event in events if event.seq > self.seq]


class LogFollow:
    """The events of one stored session past ``last_seq``, each handed out once, as a fresh
    load of its log has them: each ``read()`` reads on from where the last one stopped.

    The first read (``started`` is False) reads the log from its start (``AppendedReader
    .read_whole``) keeping only what is past ``last_seq``; the later ones read what was
    appended since. A log that changed other than by appends (replaced, cut back, repaired) is
    read again from its start by the reader, and hands out what its events past ``last_seq``
    now are; one that does not load raises the store's error, as a load would, and the next read
    starts again from the start. A store without positions (memory) is opened whole each time.
    Raising ``last_seq`` (the pages got events from elsewhere) keeps the place: what was
    appended up to it is read past, never handed out."""

    def __init__(self, store: EventStore, session_id: str, last_seq: int) -> None:
        self.store = store
        self.session_id = session_id
        self.last_seq = last_seq
        """The seq of the last event handed out (-1: none)."""
        self.last_end = -1
        """The seq of the last model call end (``CALL_ENDS``) read (-1: none)."""
        self._reader = reader_for(store)
        self._at: tuple[SessionHeader, LogPosition] | None = None
        """The log read and the position the last read stopped at (None: no read yet)."""

    @property
    def started(self) -> bool:
        """A read goes on from a position (else it reads the log from its start)."""
        return self._at is not None

    def read(self) -> list[Event]:
        """The events past ``last_seq`` the log now holds (raises the store's errors)."""
        past = _Past(self.last_seq, self.last_end if self._at is not None else -1)
        try:
            if self._reader is None:
                with self.store.open(self.session_id) as log:
                    past.add(log.events)
            elif self._at is None:
                header, position, _ = self._reader.read_whole(self.session_id, past)
                self._at = header, position
            else:
                header, position = self._at
                self._at = header, self._reader.read(header, position, past)
        except DshError:
            self._at = None  # the next read starts again from the log's start
            raise
        self.last_end = past.last_end
        if past.events:
            self.last_seq = past.events[-1].seq
        return past.events

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()


class Follower:
    def __init__(self, registry: SessionRegistry, session_id: str, last_seq: int) -> None:
        self.registry = registry
        self.session_id = session_id
        self.tail = LogFollow(registry.store, session_id, last_seq)
        self.holder: int | None = lock_holder(registry.store, session_id)
        self.task: asyncio.Task[None] | None = None
        home = getattr(registry.store, "home", None)  # a memory store has none
        self.live = None if home is None else LiveTextTail(live_text_path(home, session_id))
        self._live_call: LiveCall | None = None
        self._held: list[Delta] = []
        """Deltas read of the call in ``_live_call`` and not yet published."""
        self.published = last_seq
        """The seq of the last event published (the pages had those up to ``last_seq``)."""
        self.streamed = Streamed()
        """The deltas published of the call in ``_live_call``, for a page that joins during it."""

    async def run(self) -> None:
        registry, session_id, tail = self.registry, self.session_id, self.tail
        hub = registry.hub(session_id)
        try:
            while hub.subscribers:
                await asyncio.sleep(POLL_SECONDS)
                handle = registry.handles.get(session_id)
                if handle is not None:  # written here: the session's own observer publishes
                    tail.last_seq = len(handle.session.events) - 1  # read past when released
                    self.published = tail.last_seq
                    self._set_holder(None)
                    continue
                self._set_holder(lock_holder(registry.store, session_id))
                try:
                    if tail.started:
                        events = tail.read()
                    else:  # reading the log from its start: off the loop
                        events = await anyio.to_thread.run_sync(tail.read)
                except DshError as exc:  # e.g. a line changed in place: as a load refuses it
                    log.debug("follow %s: %s", session_id, exc)
                    continue
                if session_id in registry.handles:
                    continue
                for event in events:
                    hub.on_event(event)
                    self.streamed.heard(event)
                    self.published = event.seq
                self._share_live_text(hub)
        finally:
            tail.close()
            if self.live is not None:
                self.live.close()

    def _share_live_text(self, hub: LiveHub) -> None:
        """Publish what the model call running elsewhere streamed since the last poll, as
        ``delta`` frames: held while the events published have not reached its start, dropped
        for a call the log ended, of another session, or whose writer is gone."""
        if self.live is None:
            return
        call, deltas = self.live.read()
        if call != self._live_call:
            self._live_call, self._held, self.streamed = call, [], Streamed()
        if call is None:
            return
        self._held += deltas
        ended = self.tail.last_end > call.after
        if ended or call.session != self.session_id or live_holder(call.pid) is None:
            self._held = []
            return
        if call.after > self.tail.last_seq:  # the page lacks events before it: they come first
            return
        for channel, text in self._held:
            self.streamed.add(channel, text)
            hub.publish(frame("delta", channel=channel, text=text))
        self._held = []

    def joined(self) -> tuple[int, list[str]] | None:
        """For a page joining now, as ``Handle.joined``: the seq of the last event published
        and the deltas published since of the call running elsewhere (None: the session is
        written here, its handle's to say)."""
        if self.session_id in self.registry.handles:
            return None
        return self.published, self.streamed.frames()

    def _set_holder(self, pid: int | None) -> None:
        if pid != self.holder:
            self.holder = pid
            self.registry.hub(self.session_id).publish(frame("holder", pid=pid))


class Followers:
    """One follower per watched session id."""

    def __init__(self, registry: SessionRegistry) -> None:
        self.registry = registry
        self.running: dict[str, Follower] = {}

    def ensure(self, session_id: str, last_seq: int) -> Follower:
        follower = self.running.get(session_id)
        if follower is None or follower.task is None or follower.task.done():
            follower = Follower(self.registry, session_id, last_seq)
            follower.task = asyncio.create_task(follower.run())
            follower.task.add_done_callback(lambda _: self._done(session_id, follower))
            self.running[session_id] = follower
        return follower

    def joined(self, session_id: str) -> tuple[int, list[str]] | None:
        """``Follower.joined`` of the session's follower if one runs (None: none)."""
        follower = self.running.get(session_id)
        if follower is None or follower.task is None or follower.task.done():
            return None
        return follower.joined()

    def _done(self, session_id: str, follower: Follower) -> None:
        if self.running.get(session_id) is follower:
            del self.running[session_id]

    async def stop(self) -> None:
        for follower in list(self.running.values()):
            if follower.task is not None:
                follower.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await follower.task
        self.running.clear()
