"""What the session list shows beside each id: its title, when it was last written, and whether
another process is writing it now.

Titles come from the summaries behind every list of sessions (``dsh.transcript.listing``, the
one ``dsh sessions list`` and the TUI's picker read, cut wider here): each is kept in the summary
cache with the position in the log it covers, so a listing reads only what was appended to each
log since (a settled JSONL file whose stat is unchanged is not even opened), not every log whole;
the title is ``dsh.transcript.titles.session_title``'s (the latest ``/title``, else the first
prompt). A log that does not load shows no title. The last activity is a JSONL file's mtime;
other stores report none.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dsh.store import EventStore, SessionHeader
from dsh.transcript.listing import session_summaries
from dsh.transcript.titles import WIDEST_TITLE_CHARS
from dsh.web.follow import lock_holder

SIDEBAR_TITLE_CHARS = WIDEST_TITLE_CHARS
"""The web's titles are cut wider than the terminal's (``dsh.transcript.titles.TITLE_CHARS``)."""


class SessionIndex:
    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        """One listing at a time: the next one reads what this one cached."""

    def annotate(
        self, rows: list[dict[str, Any]], headers: Iterable[SessionHeader]
    ) -> list[dict[str, Any]]:
        """Add ``title``, ``lastActive`` (epoch ms or None), ``updatedAt`` (the time of the
        last event logged, the terminal UI's picker's order: ``dsh.tui.picker.newest_first``)
        and ``heldBy`` to list rows; ``headers``: every stored session's (the rows are some or
        all of them)."""
        headers = list(headers)
        with self._lock:
            summaries = session_summaries(
                self.store, headers, title_chars=SIDEBAR_TITLE_CHARS, every_session=True
            )
        titles = {s.id: s.title if s.named else None for s in summaries}
        updated = {s.id: s.updated_at for s in summaries}
        for row in rows:
            session_id = row["id"]
            row["title"] = titles.get(session_id)
            row["updatedAt"] = updated.get(session_id, row.get("createdAt"))
            row["lastActive"] = self._last_active(session_id)
            row["heldBy"] = None if row.get("open") else lock_holder(self.store, session_id)
        return rows

    def _last_active(self, session_id: str) -> int | None:
        """A JSONL log's mtime in epoch ms (None for other stores or a missing file)."""
        log_path = getattr(self.store, "log_path", None)
        if log_path is None:
            return None
        try:
            return Path(log_path(session_id)).stat().st_mtime_ns // 1_000_000
        except OSError:
            return None
