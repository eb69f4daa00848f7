"""What the session list shows beside each id: its title, when it was last written, and whether
another process is writing it now.

Titles come from ``dsh.transcript.title.session_title``. For a JSONL session only the log's first
lines are read (up to the first prompt), and the answer is kept while the file's size and mtime
stay put; the last activity is the file's mtime. Other stores are opened once per session until a
title appears (a first prompt never changes), and report no last activity.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dsh.errors import DshError
from dsh.events import Event, decode_event_line
from dsh.store import EventStore
from dsh.store.integrity import check_line
from dsh.transcript.title import session_title
from dsh.web.follow import lock_holder


class SessionIndex:
    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._titles: dict[str, tuple[tuple[int, int] | None, str | None]] = {}

    def annotate(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Add ``title``, ``lastActive`` (epoch ms or None) and ``heldBy`` to list rows."""
        for row in rows:
            session_id = row["id"]
            stamp = self._stamp(session_id)
            row["title"] = self.title(session_id, stamp)
            row["lastActive"] = stamp[1] // 1_000_000 if stamp is not None else None
            row["heldBy"] = None if row.get("open") else lock_holder(self.store, session_id)
        return rows

    def title(self, session_id: str, stamp: tuple[int, int] | None) -> str | None:
        with self._lock:
            known = self._titles.get(session_id)
        if known is not None and (known[0] == stamp or (stamp is None and known[1] is not None)):
            return known[1]
        try:
            title = session_title(self._events(session_id))
        except DshError:
            title = None  # unreadable now (a torn line mid-write, say): ask again next time
        with self._lock:
            self._titles[session_id] = (stamp, title)
        return title

    def _path(self, session_id: str) -> Path | None:
        log_path = getattr(self.store, "log_path", None)
        return Path(log_path(session_id)) if log_path is not None else None

    def _stamp(self, session_id: str) -> tuple[int, int] | None:
        path = self._path(session_id)
        if path is None:
            return None
        try:
            stat = path.stat()
        except OSError:
            return None
        return stat.st_size, stat.st_mtime_ns

    def _events(self, session_id: str) -> Iterator[Event]:
        """The session's events from the start, read lazily (JSONL) or from a load."""
        path = self._path(session_id)
        if path is None:
            log = self.store.open(session_id)
            try:
                yield from log.events
            finally:
                log.close()
            return
        try:
            handle = path.open("rb")
        except OSError:
            return
        with handle:
            handle.readline()  # the header
            for number, raw in enumerate(handle, start=2):
                if not raw.endswith(b"\n"):
                    return  # still being written
                canonical = check_line(raw[:-1], number=number, where=f"{path}: ")
                yield decode_event_line(canonical, line=number)
