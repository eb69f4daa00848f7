"""Read-only sessions the web server loaded from the store, and the folds of them that keep
the context panel and the session info (``ContextFold``)."""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from dsh.agent.context_fold import ContextFold
from dsh.store import EventStore
from dsh.surface import Session


class ReadCache:
    """Read-only sessions loaded from the store, kept while their file is unchanged.

    A page load asks for a session's info and its newest history page at once; both need the
    whole log, so one load serves both (the second asker waits for the first one's load rather
    than reading the log again beside it) and every scroll-back page. Freshness is the JSONL
    file's size and mtime; a store without files (SQLite, memory) is read every time.
    """

    def __init__(self, store: EventStore, size: int = 4) -> None:
        self.store = store
        self.size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[tuple[int, int], Session]] = OrderedDict()
        self._loading: dict[str, threading.Lock] = {}
        """One lock per session id while it loads: concurrent misses load it once."""

    def _stamp(self, session_id: str) -> tuple[int, int] | None:
        log_path = getattr(self.store, "log_path", None)
        if log_path is None:
            return None
        try:
            stat = Path(log_path(session_id)).stat()
        except OSError:
            return None
        return stat.st_size, stat.st_mtime_ns

    def _fresh(self, session_id: str, stamp: tuple[int, int] | None) -> Session | None:
        with self._lock:
            cached = self._entries.get(session_id)
            if cached is not None and stamp is not None and cached[0] == stamp:
                self._entries.move_to_end(session_id)
                return cached[1]
        return None

    def get(self, session_id: str) -> Session:
        """The session, read-only (raises the store's errors, e.g. SessionNotFoundError)."""
        cached = self._fresh(session_id, self._stamp(session_id))
        if cached is not None:
            return cached
        with self._lock:
            loading = self._loading.setdefault(session_id, threading.Lock())
        with loading:
            stamp = self._stamp(session_id)
            cached = self._fresh(session_id, stamp)  # loaded meanwhile by another asker
            return cached if cached is not None else self._load(session_id, stamp)

    def _load(self, session_id: str, stamp: tuple[int, int] | None) -> Session:
        session = Session.open(self.store, session_id)
        session.close()  # a read-only log holds nothing; its events stay readable
        if stamp is not None:
            with self._lock:
                self._entries[session_id] = (stamp, session)
                self._entries.move_to_end(session_id)
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
        return session

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._entries.pop(session_id, None)


class ContextFolds:
    """A ``ContextFold`` per read-only session (the ``size`` most recently asked for), so a
    repeated context panel or session info of an unchanged session reads nothing again. The
    web reads stored sessions on worker threads, so each fold is used by one of them at a
    time."""

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
