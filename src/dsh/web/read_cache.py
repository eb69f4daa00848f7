"""Read-only sessions the web server loaded from the store, kept up to date with what other
processes append, and the folds of them that keep the context panel and the session info
(``ContextFold``)."""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from dsh.agent.context_fold import ContextFold
from dsh.errors import DshError
from dsh.events import Event
from dsh.store import EventStore
from dsh.store.appended import AppendedReader, LogPosition, reader_for
from dsh.surface import Session


@dataclass(slots=True)
class _Kept:
    session: Session
    position: LogPosition
    """Where the session's stored log was read to (``dsh.store.appended``)."""


class _Replaced(Exception):
    """The stored log changed other than by appends: it is loaded again, whole."""


class _Appended:
    """The ``EventSink`` of a read on from a kept position: keeps the events, and stops the
    read at once when the log must be read from its start."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def restart(self) -> None:
        raise _Replaced

    def add(self, events: Sequence[Event]) -> None:
        self.events.extend(events)


class ReadCache:
    """Read-only sessions loaded from the store (the ``size`` most recently asked for), each
    kept with the position its stored log was read to.

    ``held(session_id)`` brings the session up to its stored log and holds it for the asking
    thread alone. When another process (``dsh run``, the TUI) appended to the log, only the
    appended events are read and folded in (``Session.catch_up``): a busy session followed
    from the web costs what was appended, not its length. A log that changed other than by
    appends (replaced, cut back, repaired: ``dsh.store.appended`` tells), or whose appended
    events do not load, is loaded again whole, so what the cache holds, or the error it
    raises, is always what a fresh load gives; a line still being written waits for its
    newline, as a load drops a torn last line. A page load asks for a session's info and its
    newest history page at once: the second asker waits for the first one's load and then
    reads nothing more. A store without positions (memory) is read whole every time.
    """

    def __init__(
        self,
        store: EventStore,
        size: int = 4,
        *,
        on_load: Callable[[str, Session], None] | None = None,
    ) -> None:
        self.store = store
        self.size = size
        self.on_load = on_load
        """Told of each whole load (the session id asked for, the session), not of a catch-up:
        the registry sends the load's warnings to the session's pages."""
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._holds: dict[str, threading.Lock] = {}
        """One lock per session id: one thread at a time brings it up to date and reads it."""

    @contextlib.contextmanager
    def held(self, session_id: str) -> Iterator[Session]:
        """The session as its stored log now stands, read-only, unchanged until released
        (raises the store's errors, e.g. SessionNotFoundError)."""
        with self._lock:
            hold = self._holds.setdefault(session_id, threading.Lock())
        with hold:
            yield self._current(session_id)

    def _current(self, session_id: str) -> Session:
        reader = reader_for(self.store)
        if reader is None:
            return self._opened(session_id)
        with reader:
            with self._lock:
                kept = self._kept.get(session_id)
                if kept is not None:
                    self._kept.move_to_end(session_id)
            if kept is not None:
                try:
                    return _caught_up(reader, kept)
                except (_Replaced, DshError):  # a whole load says what the log now is
                    self.forget(session_id)
            return self._load(reader, session_id)

    def _load(self, reader: AppendedReader, session_id: str) -> Session:
        try:
            log, position = reader.load(session_id)
            session = Session(log)
        except DshError:  # the load's own error, or the log as it stands now (not kept)
            return self._opened(session_id)
        with self._lock:
            self._kept[session_id] = _Kept(session, position)
            self._kept.move_to_end(session_id)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return self._loaded(session_id, session)

    def _opened(self, session_id: str) -> Session:
        """The session loaded whole by the store, as every other reader loads it."""
        session = Session.open(self.store, session_id)
        session.close()  # a read-only log holds nothing; its events stay readable
        return self._loaded(session_id, session)

    def _loaded(self, session_id: str, session: Session) -> Session:
        if self.on_load is not None:
            self.on_load(session_id, session)
        return session

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._kept.pop(session_id, None)


def _caught_up(reader: AppendedReader, kept: _Kept) -> Session:
    """``kept``'s session with what was appended to its log since it was read folded in."""
    appended = _Appended()
    position = reader.read(kept.session.header, kept.position, appended)
    if appended.events:
        kept.session.catch_up(appended.events)
    kept.position = position
    return kept.session


class ContextFolds:
    """A ``ContextFold`` per read-only session (the ``size`` most recently asked for), so a
    repeated context panel or session info of an unchanged session reads nothing again, and
    one of a session another process appends to folds only what was appended. The web reads
    stored sessions on worker threads, so each fold is used by one of them at a time."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._folds: OrderedDict[str, tuple[threading.Lock, ContextFold]] = OrderedDict()

    @contextlib.contextmanager
    def held(self, session_id: str) -> Iterator[ContextFold]:
        """The fold of ``session_id``, held for this thread alone."""
        with self._lock:
            entry = self._folds.get(session_id)
            if entry is None:
                entry = self._folds[session_id] = (threading.Lock(), ContextFold())
            self._folds.move_to_end(session_id)
            while len(self._folds) > self.size:
                self._folds.popitem(last=False)
        with entry[0]:
            yield entry[1]
