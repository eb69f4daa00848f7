"""What the session list shows beside each id: its title, when it was last written, and whether
another process is writing it now.

Titles come from ``dsh.transcript.titles.session_title`` (the latest ``/title``, else the first
prompt), the one the TUI shows. For a JSONL session only the lines that can name it are decoded
(every ``session/title`` and the first ``user/message``; a line is told by its canonical
``{"type":…`` prefix), and the answer is kept while the file's size and mtime stay put; the last
activity is the file's mtime. Other stores have no cheap change stamp: they are opened once per
session until a title appears and report no last activity, so a later ``/title`` there shows
once the server restarts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dsh.errors import DshError
from dsh.events import Event, UserMessageEvent, UserSource, decode_event_line
from dsh.store import EventStore
from dsh.store.integrity import check_line
from dsh.transcript.titles import session_title
from dsh.web.follow import lock_holder

SIDEBAR_TITLE_CHARS = 80
"""The web's titles are cut wider than the terminal's (``dsh.transcript.titles.TITLE_CHARS``)."""
_TITLE_LINE = b'{"type":"session/title"'
_PROMPT_LINE = b'{"type":"user/message"'


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
            title = session_title(self._events(session_id), SIDEBAR_TITLE_CHARS)
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
        """The session's events that can title it, read lazily (JSONL), or all from a load."""
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
            prompted = False
            for number, raw in enumerate(handle, start=2):
                if not raw.endswith(b"\n"):
                    return  # still being written
                prompt = not prompted and raw.startswith(_PROMPT_LINE)
                if not prompt and not raw.startswith(_TITLE_LINE):
                    continue
                canonical = check_line(raw[:-1], number=number, where=f"{path}: ")
                event = decode_event_line(canonical, line=number)
                prompted = prompted or _is_prompt(event)
                yield event


def _is_prompt(event: Event) -> bool:
    return (
        isinstance(event, UserMessageEvent)
        and event.surface_op == "append"
        and isinstance(event.data.source, UserSource)
    )
