"""Read a stored session's new events as another process appends them, without rereading it.

``LogTail(store, session_id, after_seq)`` remembers where the log stood; each ``read()`` returns
the complete events appended since (seq order, checked like a load: seal, decode, contiguous
seqs) and moves on. JSONL keeps the byte offset of the next line, so a read costs what was
appended, not the log's length; a line still being written (no newline yet) waits for the next
read. SQLite asks for the rows past the last seq. Any other store is reopened (correct, slower).
Reading never writes, locks or repairs anything.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from dsh.errors import EventValidationError, LogCorruptError, StoreError
from dsh.events import Event, decode_event_line, validate_event_shape
from dsh.store.base import EventStore
from dsh.store.integrity import check_line, check_row
from dsh.store.jsonl import JsonlStore
from dsh.store.sqlite import SqliteStore, connect_reader


class LogTail:
    def __init__(self, store: EventStore, session_id: str, after_seq: int) -> None:
        self.store = store
        self.session_id = session_id
        self.last_seq = after_seq
        """The seq of the last event handed out (-1: none yet)."""
        self._path: Path | None = None
        self._offset = 0
        self._db: sqlite3.Connection | None = None
        if isinstance(store, JsonlStore):
            self._path = store.log_path(session_id)
            self._offset = self._offset_after(after_seq)

    def read(self) -> list[Event]:
        """The complete events appended since the last read (raises the store's errors)."""
        if self._path is not None:
            events = self._read_jsonl(self._path)
        elif isinstance(self.store, SqliteStore):
            events = self._read_sqlite(self.store)
        else:
            log = self.store.open(self.session_id)
            try:
                events = list(log.events[self.last_seq + 1 :])
            finally:
                log.close()
        if events:
            self.last_seq = events[-1].seq
        return events

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # ---- JSONL -----------------------------------------------------------------------------

    def _offset_after(self, seq: int) -> int:
        """The byte offset where the line of event ``seq + 1`` starts (line 1 is the header)."""
        assert self._path is not None
        try:
            data = self._path.read_bytes()
        except OSError as exc:
            raise StoreError(f"cannot read {self._path}: {exc.strerror or exc}") from exc
        offset = 0
        for _ in range(seq + 2):
            newline = data.find(b"\n", offset)
            if newline < 0:
                raise LogCorruptError(f"{self._path}: the log ends before seq {seq}", seq=seq)
            offset = newline + 1
        return offset

    def _read_jsonl(self, path: Path) -> list[Event]:
        try:
            with path.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size < self._offset:  # cut back (a torn tail moved aside): find our place
                    self._offset = self._offset_after(self.last_seq)
                handle.seek(self._offset)
                data = handle.read()
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
        complete = data.rfind(b"\n") + 1  # a line without its newline is still being written
        events: list[Event] = []
        line = self.last_seq + 3  # line 1 is the header, seq N is line N + 2
        for raw in data[:complete].split(b"\n")[:-1]:
            canonical = check_line(raw, number=line, where=f"{path}: ")
            event = decode_event_line(canonical, line=line)
            self._check_next(event, len(events), f"{path}: line {line}")
            events.append(event)
            line += 1
        self._offset += complete
        return events

    # ---- SQLite ----------------------------------------------------------------------------

    def _read_sqlite(self, store: SqliteStore) -> list[Event]:
        if self._db is None:
            self._db = connect_reader(store.path)
        try:
            rows = self._db.execute(
                "SELECT seq, body FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
                (self.session_id, self.last_seq),
            ).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read session {self.session_id}: {exc}") from exc
        events: list[Event] = []
        for seq, body in rows:
            where = f"session {self.session_id}: seq {seq}"
            try:
                line = check_row(bytes(body), seq=seq, where="")
                event = decode_event_line(line, line=seq)
            except LogCorruptError as exc:
                raise LogCorruptError(f"session {self.session_id}: {exc}", seq=seq) from exc
            self._check_next(event, len(events), where)
            events.append(event)
        return events

    def _check_next(self, event: Event, position: int, where: str) -> None:
        """The event continues the log and keeps the rules a load checks."""
        expected = self.last_seq + 1 + position
        if event.seq != expected:
            raise LogCorruptError(
                f"{where}: expected seq {expected} but found seq {event.seq}", seq=event.seq
            )
        try:
            validate_event_shape(event)
        except EventValidationError as exc:
            raise LogCorruptError(f"{where}: {exc}", seq=event.seq) from exc
