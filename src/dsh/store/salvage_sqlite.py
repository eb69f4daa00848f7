"""``dsh sessions repair`` for the SQLite store: keep the events of a session that load.

A session whose event rows stop loading (a body that no longer decodes or breaks a per-event
rule, a missing row, rows SQLite itself cannot read) refuses to load, like a JSONL log bad in the
middle. Salvage keeps the longest run of events from seq 0 that loads (and that the caller's
``validate`` accepts, e.g. the surface fold) and deletes the session's rows after it; other
sessions in the database are not touched. It never works without a copy: first the database file
and its write-ahead log are copied byte for byte to ``dsh.sqlite3.before-repair-<time>`` (and
``…-wal``), fsynced, while a write transaction keeps every other writer out, so the copy is one
consistent state; only then are rows deleted, in the same transaction. The report says exactly
which events were dropped and why, and how many of them are intact (their rows pass their seals
and decode), by seq, with a query that reads the dropped rows from the copy; intact rows after a
bad one go too, for the reason ``dsh.store.salvage`` gives (a log keeps no gap).
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from dsh.errors import SessionNotFoundError, StoreError
from dsh.events import decode_events
from dsh.store.base import decode_header
from dsh.store.database_file import damaged_database, database_exists, is_damage
from dsh.store.derived import drop_derived
from dsh.store.fd_write import write_all
from dsh.store.jsonl import fsync_dir
from dsh.store.salvage import Validator, first_bad, intact, intact_words, loadable_prefix, spans
from dsh.store.sqlite import SqliteStore, connect

_COPY_CHUNK = 1 << 20


@dataclass
class SqliteSalvageReport:
    """What ``salvage_sqlite_session`` kept and dropped (counted in events, named by seq)."""

    session_id: str
    path: Path
    kept: int
    """Events kept: seq 0 … kept-1."""
    stored: int
    """Event rows that could be read."""
    dropped_bytes: int = 0
    first_bad_seq: int | None = None
    reason: str | None = None
    unreadable: str | None = None
    """Why SQLite stopped returning rows (a damaged page), if it did."""
    copy: Path | None = None
    copies: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    intact: list[int] = field(default_factory=list)
    """Seqs of the dropped rows that pass their CRC seals and decode (in the copy still)."""

    @property
    def needed(self) -> bool:
        return self.kept < self.stored or self.unreadable is not None

    @property
    def changed(self) -> bool:
        return self.copy is not None

    def _where_intact(self) -> str:
        """Where the intact dropped rows are, and a command that prints the dropped rows."""
        one = len(self.intact) == 1
        query = (
            f"SELECT seq, body FROM events WHERE session_id='{self.session_id}' "
            f"AND seq >= {self.first_bad_seq} ORDER BY seq"
        )
        return (
            f"{'it is' if one else 'they are'} seq {spans(self.intact)} "
            f'of this session in the copy {self.copy} (`sqlite3 {self.copy} "{query}"` prints '
            "the dropped rows)"
        )

    def lines(self) -> list[str]:
        """The report as plain lines for the terminal."""
        if not self.changed:
            return [f"session {self.session_id}: the log loads as it is; nothing to repair"]
        out = [f"session {self.session_id}: copied the database to {self.copy}"]
        out.extend(f"copied its write-ahead log to {extra}" for extra in self.copies)
        out.append(
            f"kept {self.kept} events (seq 0-{self.kept - 1})"
            if self.kept
            else "kept the session header; no event survived"
        )
        dropped = self.stored - self.kept
        if dropped:
            out.append(
                f"dropped events seq {self.kept}-{self.stored - 1} ({dropped} events, "
                f"{self.dropped_bytes} bytes); " + first_bad("seq", self.first_bad_seq, self.reason)
            )
            out.append(intact_words(len(self.intact), dropped, "event", self._where_intact()))
        if self.unreadable is not None:
            out.append(
                f"dropped every row after seq {self.stored - 1} that SQLite could not read "
                f"({self.unreadable})"
                if self.stored
                else f"dropped every event row: SQLite could not read them ({self.unreadable})"
            )
        out.extend(self.notes)
        return out


def salvage_sqlite_session(
    store: SqliteStore, session_id: str, *, validate: Validator | None = None
) -> SqliteSalvageReport:
    """Cut the events of ``session_id`` to the longest run that loads (see the module doc).

    Holds the session's write lock throughout. Raises ``LogCorruptError`` when the session's
    header is unreadable (there is nothing to keep) and ``StoreError`` when SQLite cannot delete
    the bad rows (the copy is kept and named; nothing else changed)."""
    if not database_exists(store.path):
        raise SessionNotFoundError(f"no session {session_id!r} in {store.path}")
    lock = store.write_lock(session_id)
    try:
        db = connect(store.path)
        try:
            report = plan_sqlite_salvage(db, store.path, session_id, validate=validate)
            if report.needed:
                _copy_and_cut(db, store.path, report)
                dropped = drop_derived(store.home, session_id)
                report.notes.extend(f"dropped {p} (rebuilt on use)" for p in dropped)
            return report
        finally:
            db.close()
    finally:
        lock.release()


def plan_sqlite_salvage(
    db: sqlite3.Connection, path: Path, session_id: str, *, validate: Validator | None = None
) -> SqliteSalvageReport:
    """Decide what to keep of the session's rows without writing anything."""
    try:
        row = db.execute("SELECT header FROM sessions WHERE id = ?", (session_id,)).fetchone()
    except sqlite3.DatabaseError as exc:
        if is_damage(exc):
            raise damaged_database(path, exc) from exc
        raise StoreError(
            f"{path}: cannot read the header of session {session_id} ({exc}); nothing was changed"
        ) from exc
    if row is None:
        raise SessionNotFoundError(f"no session {session_id!r} in {path}")
    decode_header(bytes(row[0]), where=f"{path}: session {session_id}")  # raises: nothing to keep
    rows, unreadable = _read_rows(db, session_id)
    bodies = [body for _, body in rows]
    kept, reason = _contiguous(rows)
    counted, why, canonical = loadable_prefix(bodies[:kept], first=0, unit="seq")
    if counted < kept:
        kept, reason = counted, why
    if validate is not None and kept:
        bad = validate(decode_events(canonical[:kept], first_line=0))
        if bad is not None:
            kept, reason = bad, f"seq {bad}: refused by the surface fold"
    report = SqliteSalvageReport(session_id, path, kept=kept, stored=len(rows))
    report.unreadable = unreadable
    if kept < len(rows):
        report.first_bad_seq, report.reason = kept, reason
        report.dropped_bytes = sum(len(body) for body in bodies[kept:])
        report.intact = [seq for seq, body in rows[kept:] if intact(body)]
    return report


def _read_rows(
    db: sqlite3.Connection, session_id: str
) -> tuple[list[tuple[int, bytes]], str | None]:
    """The session's rows in seq order, up to the first one SQLite cannot read (and why)."""
    rows: list[tuple[int, bytes]] = []
    try:
        cursor = db.execute(
            "SELECT seq, body FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        )
        while (found := cursor.fetchone()) is not None:
            rows.append((int(found[0]), bytes(found[1])))
    except sqlite3.DatabaseError as exc:
        return rows, str(exc)
    return rows, None


def _contiguous(rows: list[tuple[int, bytes]]) -> tuple[int, str | None]:
    """How many rows have the seq of their position, and why not more (a missing row)."""
    for position, (seq, _) in enumerate(rows):
        if seq != position:
            return (
                position,
                f"seq {position}: the row is missing (the next stored row is seq {seq})",
            )
    return len(rows), None


def _copy_and_cut(db: sqlite3.Connection, path: Path, report: SqliteSalvageReport) -> None:
    db.execute("PRAGMA synchronous=FULL")
    db.execute("BEGIN IMMEDIATE")  # no other writer commits while the files are copied
    try:
        report.copy = _copy_aside(path)
        wal = path.with_name(path.name + "-wal")
        if wal.is_file() and wal.stat().st_size:  # an empty WAL holds nothing to keep
            report.copies.append(_copy_file(wal, report.copy.with_name(report.copy.name + "-wal")))
        fsync_dir(path.parent)
        db.execute(
            "DELETE FROM events WHERE session_id = ? AND seq >= ?", (report.session_id, report.kept)
        )
        db.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        db.execute("ROLLBACK")
        raise StoreError(
            f"cannot delete the bad rows of session {report.session_id} from {path}: {exc}; "
            f"the database is as it was, and a copy is at {report.copy}"
        ) from exc
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _copy_aside(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    for attempt in range(100):
        suffix = stamp if attempt == 0 else f"{stamp}-{attempt}"
        try:
            return _copy_file(path, path.with_name(f"{path.name}.before-repair-{suffix}"))
        except FileExistsError:
            continue
    raise StoreError(f"cannot find a free name for a copy of {path}")


def _copy_file(source: Path, target: Path) -> Path:
    """Copy ``source`` to the new file ``target`` byte for byte and fsync it."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with source.open("rb") as handle:
            while chunk := handle.read(_COPY_CHUNK):
                write_all(fd, chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    return target
