"""Read a stored log on from a remembered position: only what was appended since.

A ``LogPosition`` says how far a reader got (the last seq it read) and how to tell that the log
it read is still the one stored: a hash of the session header, and a hash of the last line (or
row) it read, the *anchor*. JSONL also keeps the byte offset after that line and the file's
inode, size and mtime when it was read; SQLite keeps the seq (the anchor is that row) and the
session's count of rows changed in place (``dsh.store.sqlite_schema``, ``003_event_edits``).

``AppendedReader.read(header, position, sink)`` hands the events after ``position`` to ``sink``
in batches and returns the new position. When the position no longer holds (the file was
replaced, cut back, or the session deleted and created again: another inode, a smaller size, a
changed header or anchor) it calls ``sink.restart()`` and reads the log from its first event;
``position=None`` does the same. A JSONL log whose inode, size and mtime are as remembered is not
opened at all, provided that mtime was already ``SETTLED_NS`` old when it was read: file times
are coarse (a clock tick, or more), so a file written again within the same tick could keep its
mtime, and a recent one is checked by its anchor instead (git's "racy clean" rule). Events are
checked as a load checks them (seals, decode, contiguous seqs, the
surface rules), a chunk at a time; a line still being written (no newline yet) waits for the next
read. Reading never writes, locks or repairs anything. Errors are the store's (``StoreError``,
``LogCorruptError``); a caller that wants the load's exact message opens the log.

``AppendedReader.load(session_id)`` reads a whole session the same way, header included (one
open of the file, so header and events are of the same log): a read-only ``SessionLog`` (with
the warning a load gives of a torn last line) and the position after its last complete event,
from which ``read`` goes on (the web's read cache keeps sessions so: ``dsh.web.read_cache``).
``read_whole(session_id, sink)`` is that read into a sink of the caller's (the web's follower
keeps only the events past the ones its page has: ``dsh.web.follow``).

A file of the size it had when read but with another mtime was changed in place (an append
always grows it): it is read again from its start, so a line edited by hand or by a disk fault
is found and the session shows as unreadable, not as it was. What a position cannot see: a byte
changed in place inside what was already read while the file also grew, the anchor kept (or a
change that kept the file's inode, size and mtime). dsh never rewrites a log in place
(JSONL repair and import write a new file and rename it); a log cut back in place (SQLite repair,
a failed write undone) that grows again holds later events at the anchor's place, and each event
carries its time, so the anchor differs. A SQLite log is read again from its start when its
count of changed rows is not the one remembered (an ``UPDATE`` of a row by hand, a deleted one):
the count is one lookup, where checking what was read would read it all again. What it cannot
see is a change made below SQLite (bytes of the database file edited, a disk fault), which a
load still refuses.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple, Protocol

import msgspec

from dsh.errors import HeaderCorruptError, LogCorruptError, SessionNotFoundError, StoreError
from dsh.events import Event, decode_event_lines, decode_events
from dsh.store.base import EventStore, SessionHeader, SessionLog, decode_header, encode_header
from dsh.store.integrity import check_rows, unseal_counted
from dsh.store.jsonl import READ_CHUNK, JsonlStore, decode_header_line, torn_tail_warning
from dsh.store.sqlite import SqliteStore, connect_reader
from dsh.store.sqlite_schema import edits_of

ROWS_PER_BATCH = 2048
"""SQLite rows decoded (and handed on) at a time."""
SETTLED_NS = 2_000_000_000
"""How old a JSONL file's mtime must be for an unchanged stat to mean an unchanged file."""


class LogPosition(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """How far a reader got in one stored log, and what identifies that log."""

    seq: int
    """The last event read (-1: none; the anchor is then the header)."""
    header: str
    """Hash of the session header's canonical bytes."""
    anchor: str
    """Hash of the last line read, with its seal and newline (JSONL; the header line when
    ``seq`` is -1), or of the last row's body (SQLite; the header's bytes when ``seq`` is -1)."""
    offset: int = 0
    """JSONL: the byte offset just after the anchor line (where the next line starts)."""
    anchor_size: int = 0
    """JSONL: the anchor line's length in bytes."""
    inode: int = 0
    size: int = 0
    mtime_ns: int = -1
    """JSONL: the file's inode, size and mtime as they were just before it was read (mtime -1:
    not yet settled, so the file is opened and its anchor checked next time)."""
    seen_mtime_ns: int = -1
    """JSONL: the file's mtime when it was read, settled or not (-1: unknown, an older cache).
    A file of the same size with another mtime was changed in place, not appended to: it is
    read again from its start (and so checked line by line)."""
    edits: int = -1
    """SQLite: the session's count of rows changed in place when it was read (-1: unknown, so
    the log is read again from its start next time)."""


class EventSink(Protocol):
    """Where a read puts the events it decodes."""

    def restart(self) -> None:
        """Forget every event handed on so far: the log is read again from its start."""

    def add(self, events: Sequence[Event]) -> None:
        """The next events, in seq order."""


def fingerprint(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def header_key(header: SessionHeader) -> str:
    return fingerprint(encode_header(header))


class _Kept:
    """An ``EventSink`` that keeps what it is handed (a read from no position: no restart)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def restart(self) -> None:
        self.events = []

    def add(self, events: Sequence[Event]) -> None:
        self.events.extend(events)


class Whole(NamedTuple):
    """What ``AppendedReader.read_whole`` read of a session besides its events."""

    header: SessionHeader
    position: LogPosition
    """After the last complete event."""
    warnings: tuple[str, ...] = ()
    """What a load of the log warns of (a torn last line dropped), as the store's open does."""


class ReadOnlyLog(SessionLog):
    """A session log read through an ``AppendedReader``: never written, it grows only by
    ``catch_up`` with what the reader reads on."""

    def __init__(
        self, header: SessionHeader, events: list[Event], warnings: Sequence[str] = ()
    ) -> None:
        super().__init__(header, events, writable=False, resumed=True, warnings=warnings)

    def _write_lines(self, lines: list[bytes], *, durable: bool) -> None:
        raise AssertionError("a read-only log is never written")  # append refuses first

    def _sync(self) -> None:
        pass

    def _close(self) -> None:
        pass


class AppendedReader:
    """Reads any number of sessions of one JSONL or SQLite store on from their positions."""

    def __init__(self, store: JsonlStore | SqliteStore) -> None:
        self.store = store
        self._db: sqlite3.Connection | None = None

    def read(
        self, header: SessionHeader, position: LogPosition | None, sink: EventSink
    ) -> LogPosition:
        """Hand ``sink`` what follows ``position`` in session ``header.id``; the new position."""
        key = header_key(header)
        if position is not None and position.header != key:
            position = None
        if isinstance(self.store, JsonlStore):
            return _read_jsonl(self.store.log_path(header.id), key, position, sink)
        return self._read_sqlite(header, key, position, sink)

    def load(self, session_id: str) -> tuple[ReadOnlyLog, LogPosition]:
        """Session ``session_id`` read whole from its start: a read-only log of its complete
        events (a line still being written is left, as a load drops a torn one, and the log
        warns of it as the load does) and the position after the last. Raises the store's
        errors (``SessionNotFoundError``, …)."""
        kept = _Kept()
        whole = self.read_whole(session_id, kept)
        return ReadOnlyLog(whole.header, kept.events, whole.warnings), whole.position

    def read_whole(self, session_id: str, sink: EventSink) -> Whole:
        """Hand ``sink`` every complete event of session ``session_id`` from its start (no
        ``restart``); its header, the position after the last, and what a load warns of."""
        if isinstance(self.store, JsonlStore):
            return self._load_jsonl(session_id, sink)
        return self._load_sqlite(session_id, sink)

    def _load_jsonl(self, session_id: str, sink: EventSink) -> Whole:
        assert isinstance(self.store, JsonlStore)
        path = self.store.log_path(session_id)
        if "/" in session_id or session_id in {"", ".", ".."} or not path.is_file():
            raise SessionNotFoundError(f"no session {session_id!r} in {self.store.root}")
        try:
            with path.open("rb") as handle:
                seen = os.fstat(handle.fileno())
                first = handle.readline()
                if not first.endswith(b"\n"):
                    raise HeaderCorruptError(f"{path}: line 1: missing session header", line=1)
                header = decode_header_line(first[:-1], path)
                start = _seen(_header_position(first, header_key(header)), seen)
                position = _jsonl_lines(handle, path, start, sink)
                torn = handle.tell() - position.offset  # after the last newline read
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
        return Whole(header, position, (torn_tail_warning(path, torn),) if torn else ())

    def _load_sqlite(self, session_id: str, sink: EventSink) -> Whole:
        assert isinstance(self.store, SqliteStore)
        path = self.store.path
        if not path.is_file():  # connecting would create it
            raise SessionNotFoundError(f"no session {session_id!r} in {path}")
        if self._db is None:
            self._db = connect_reader(path)
        try:
            row = self._db.execute(
                "SELECT header FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise SessionNotFoundError(f"no session {session_id!r} in {path}")
            header = decode_header(bytes(row[0]), where=f"{path}: session {session_id}")
            key = header_key(header)
            edits = edits_of(self._db, session_id)  # before the rows: a later edit reads again
            start = LogPosition(seq=-1, header=key, anchor=key, edits=edits)
            position = _sqlite_rows(self._rows(session_id, 0), session_id, start, sink, edits)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read session {session_id}: {exc}") from exc
        return Whole(header, position)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> AppendedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- SQLite ----------------------------------------------------------------------------

    def _read_sqlite(
        self, header: SessionHeader, key: str, position: LogPosition | None, sink: EventSink
    ) -> LogPosition:
        assert isinstance(self.store, SqliteStore)
        if self._db is None:
            self._db = connect_reader(self.store.path)
        session_id = header.id
        try:
            edits = edits_of(self._db, session_id)  # before the rows: a later edit reads again
            moved = edits < 0 or edits != position.edits if position is not None else False
            if moved and position is not None and position.seq >= 0:
                position = None  # rows it read may have changed: read them again
            if position is not None and position.seq >= 0:
                cursor = self._rows(session_id, position.seq)
                first = cursor.fetchone()
                if first is not None and fingerprint(bytes(first[1])) == position.anchor:
                    return _sqlite_rows(cursor, session_id, position, sink, edits)
                cursor.close()
                position = None
            if position is None:  # else: the remembered empty log, read from its first row
                sink.restart()
            start = LogPosition(seq=-1, header=key, anchor=key, edits=edits)
            return _sqlite_rows(self._rows(session_id, 0), session_id, start, sink, edits)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read session {session_id}: {exc}") from exc

    def _rows(self, session_id: str, from_seq: int) -> sqlite3.Cursor:
        assert self._db is not None
        return self._db.execute(
            "SELECT seq, body FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq",
            (session_id, from_seq),
        )


def _sqlite_rows(
    cursor: sqlite3.Cursor, session_id: str, position: LogPosition, sink: EventSink, edits: int
) -> LogPosition:
    """Decode the rows left in ``cursor`` (those after ``position``) a batch at a time; the
    position after them records ``edits``, the session's count of changed rows read first."""
    seq, anchor = position.seq, position.anchor
    while rows := cursor.fetchmany(ROWS_PER_BATCH):
        bodies = [bytes(body) for _, body in rows]
        where = f"session {session_id}: "
        lines = check_rows(bodies, first_seq=seq + 1, where=where)
        try:
            events = decode_events(lines, first_line=seq + 1, first_seq=seq + 1)
        except LogCorruptError as exc:
            raise LogCorruptError(f"session {session_id}: {exc}", seq=exc.seq) from exc
        sink.add(events)
        seq, anchor = events[-1].seq, fingerprint(bodies[-1])
    return LogPosition(seq=seq, header=position.header, anchor=anchor, edits=edits)


# ---- JSONL ---------------------------------------------------------------------------------


def _read_jsonl(path: Path, key: str, position: LogPosition | None, sink: EventSink) -> LogPosition:
    try:
        if position is not None and _unchanged(position, os.stat(path)):
            return position
        with path.open("rb") as handle:
            seen = os.fstat(handle.fileno())  # before reading: later appends are read next time
            if position is None or not _still_holds(handle, position, seen):
                sink.restart()
                position = _start(handle, path, key)
            return _jsonl_lines(handle, path, _seen(position, seen), sink)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _seen(position: LogPosition, seen: os.stat_result) -> LogPosition:
    """``position`` with the file's identity as ``seen`` just before it is read on."""
    settled = seen.st_mtime_ns < time.time_ns() - SETTLED_NS
    return msgspec.structs.replace(
        position,
        inode=seen.st_ino,
        size=seen.st_size,
        mtime_ns=seen.st_mtime_ns if settled else -1,
        seen_mtime_ns=seen.st_mtime_ns,
    )


def _start(handle: BinaryIO, path: Path, key: str) -> LogPosition:
    """The position of an empty log: just after the header line (the handle is left there)."""
    handle.seek(0)
    first = handle.readline()
    if not first.endswith(b"\n"):
        raise HeaderCorruptError(f"{path}: line 1: missing session header", line=1)
    return _header_position(first, key)


def _header_position(first: bytes, key: str) -> LogPosition:
    """Just after the header line ``first`` (with its newline) of the log whose header is
    ``key``."""
    size = len(first)
    return LogPosition(seq=-1, header=key, anchor=fingerprint(first), offset=size, anchor_size=size)


def _unchanged(position: LogPosition, seen: os.stat_result) -> bool:
    return (position.inode, position.size, position.mtime_ns) == (
        seen.st_ino,
        seen.st_size,
        seen.st_mtime_ns,
    )


def _still_holds(handle: BinaryIO, position: LogPosition, seen: os.stat_result) -> bool:
    """The file is the one read before, grown or not: same inode, at least as long, not
    changed in place (the same size with another mtime), the same anchor line just before the
    remembered offset (the handle is left at that offset)."""
    if seen.st_ino != position.inode or seen.st_size < position.offset:
        return False
    # the mtime it had when read (an older cache kept it only once settled)
    known = position.seen_mtime_ns if position.seen_mtime_ns >= 0 else position.mtime_ns
    if known >= 0 and seen.st_size == position.size and seen.st_mtime_ns != known:
        return False
    handle.seek(position.offset - position.anchor_size)
    line = handle.read(position.anchor_size)
    return len(line) == position.anchor_size and fingerprint(line) == position.anchor


def _jsonl_lines(
    handle: BinaryIO, path: Path, position: LogPosition, sink: EventSink
) -> LogPosition:
    """Decode the complete lines from ``position.offset`` on (the handle is there), a chunk at a
    time; what follows the last newline is left for the next read."""
    seq, offset, anchor, anchor_size = (
        position.seq,
        position.offset,
        position.anchor,
        position.anchor_size,
    )
    pending = b""
    while chunk := handle.read(READ_CHUNK):
        data = pending + chunk if pending else chunk
        end = data.rfind(b"\n") + 1
        if not end:  # a line longer than a chunk: keep reading until it ends
            pending = data
            continue
        line = seq + 3  # line 1 is the header, seq N is line N + 2
        body, count = unseal_counted(data, 0, end, first_line=line, where=f"{path}: ")
        try:
            events = decode_event_lines(body, line_count=count, first_line=line, first_seq=seq + 1)
        except LogCorruptError as exc:
            raise LogCorruptError(f"{path}: {exc}", line=exc.line, seq=exc.seq) from exc
        sink.add(events)
        last = data.rfind(b"\n", 0, end - 1) + 1
        seq, offset = events[-1].seq, offset + end
        anchor, anchor_size = fingerprint(data[last:end]), end - last
        pending = data[end:]
    return msgspec.structs.replace(
        position, seq=seq, offset=offset, anchor=anchor, anchor_size=anchor_size
    )


def reader_for(store: EventStore) -> AppendedReader | None:
    """A reader for ``store``, or None for a store it cannot read on from a position."""
    return AppendedReader(store) if isinstance(store, JsonlStore | SqliteStore) else None
