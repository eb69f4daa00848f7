"""What a checkpoint stands for, read forwards, and the session's anchor index (kept on disk
between processes when the backend is given where).

A footer names the smallest and largest seq of the *conversation* events a checkpoint stands
for — directly, or through the checkpoints and pruned results it shadows — never surface order
(a superseded state checkpoint sits before the older tail it did not shadow; docs/compaction.md,
"The footer").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from dsh.compaction.anchor_file import Added, AnchorFile
from dsh.compaction.anchors import AnchorIndex
from dsh.events import (
    is_append_surface_event,
    is_replacement_surface_event,
    surface_message,
)
from dsh.surface import Session
from dsh.transcript import render_message


class ConversationSpans:
    """Memoised ``(smallest, largest)`` conversation seq behind each surface event. Events are
    immutable, so a figure once computed stays true."""

    def __init__(self) -> None:
        self._session_id: str | None = None
        self._memo: dict[int, tuple[int, int]] = {}

    def of(self, session: Session, seqs: Iterable[int]) -> tuple[int, int]:
        if session.id != self._session_id:
            self._session_id, self._memo = session.id, {}
        spans = [self._one(session, seq) for seq in seqs]
        return min(s for s, _ in spans), max(e for _, e in spans)

    def _one(self, session: Session, seq: int) -> tuple[int, int]:
        events = session.events
        stack = [seq]
        while stack:  # iterative: a chain of superseded states can be long
            top = stack[-1]
            if top in self._memo:
                stack.pop()
                continue
            event = events[top]
            if not is_replacement_surface_event(event):
                self._memo[top] = (top, top)
                stack.pop()
                continue
            sources = [
                s
                for s in (getattr(event, "source_event_seqs", None) or ())
                if is_append_surface_event(events[s]) or is_replacement_surface_event(events[s])
            ]
            missing = [s for s in sources if s not in self._memo]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()  # a replacement always shadows surface events (validated at append)
            self._memo[top] = (
                min(self._memo[s][0] for s in sources),
                max(self._memo[s][1] for s in sources),
            )
        return self._memo[seq]


class SessionAnchors:
    """An ``AnchorIndex`` over the rendered appended messages of one session, extended with the
    events appended since the last look (each event is scanned once). Updates run in a pass's
    worker thread; a lock serialises them, so a pass cancelled while its worker still runs
    leaves the next pass waiting for that worker rather than racing it.

    With ``stored`` (where a session's anchor index file lives, ``dsh.compaction.anchor_file``)
    the first update of a session reads the stored index and scans only the events it does not
    cover, and every update stores what it added. The index is the same either way."""

    def __init__(self, stored: Callable[[str], Path] | None = None) -> None:
        self._stored = stored
        self._file: AnchorFile | None = None
        self._session_id: str | None = None
        self._scanned = 0
        self._lock = threading.Lock()
        self.index = AnchorIndex()

    def update(self, session: Session, upto: int | None = None) -> AnchorIndex:
        """The index over the session's first ``upto`` events (all of them when None)."""
        with self._lock:
            end = len(session.events) if upto is None else upto
            if session.id != self._session_id or end < self._scanned:
                self._start(session, end)
            appendable = self._file is not None and self._file.end == self._scanned
            added = Added(self._scanned) if appendable else None  # else written whole
            for event in session.events[self._scanned : end]:
                if is_append_surface_event(event):
                    message = surface_message(event)
                    if message is not None:
                        found = self.index.add(render_message(message))
                        if added is not None:
                            added.counts.update(found)
                            added.texts += 1
            self._scanned = end
            if self._file is not None:
                self._file.save(session, self.index, end, added)
            return self.index

    def _start(self, session: Session, end: int) -> None:
        """Begin ``session``'s index: the stored one (of at most ``end`` events), else empty."""
        self._session_id, self._scanned, self.index = session.id, 0, AnchorIndex()
        self._file = None
        if self._stored is not None:
            self._file = AnchorFile(self._stored(session.id), session)
            loaded = self._file.load(session, end)
            if loaded is not None:
                self.index, self._scanned = loaded
