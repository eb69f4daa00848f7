"""SQLite store: every session in one file, ``<home>/dsh.sqlite3``.

Each event row keeps the exact bytes the JSONL store would write (the canonical JSON sealed with
its CRC, ``dsh.store.integrity``: a changed byte refuses the load, naming the seq; rows written
before seals load as they are), so both stores share one codec and a log moves between them
unchanged. Appends commit one transaction per batch with
``synchronous=NORMAL`` (a process crash loses nothing appended); a batch that contains an
fsync-point event requests an fsync of the WAL from a background thread that coalesces requests
(group commit, as the JSONL store), and ``sync``/``close`` wait for it, so a power loss loses
nothing that was synced. The same thread checkpoints the WAL, so appends do not wait for a
checkpoint's fsyncs (``dsh.store.wal``). The schema is built by named migrations recorded in
``schema_migrations`` (``dsh.store.sqlite_schema``); a database that records a migration this
version does not know (a newer dsh's) is refused, read or write, as a JSONL header of a newer
format version is. A session's latest ``session/settings`` event is one lookup in a partial
index of those rows (``latest_settings``). Opening a
session for writing after its previous writer stopped without closing (its lock file still names
it) runs ``PRAGMA quick_check`` first and reports the outcome as one warning line.
A session opens a batch of rows at a time, each checked and decoded as the cursor reads it
(``dsh.store.sqlite_rows``), so the open costs about the memory of the session's events.
Readers (``list``, a read-only ``open``, ``dsh.store.appended``) also read a
database whose directory cannot be written (``connect_reader``), one that lacks only an index a
later migration adds included.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from dsh.config.private_dirs import make_private_directory
from dsh.errors import (
    HeaderCorruptError,
    LogCorruptError,
    SessionNotFoundError,
    StorageWriteError,
    StoreError,
)
from dsh.events import (
    Event,
    SessionSettingsEvent,
    check_contiguous,
    decode_event_line,
    encode_event,
)
from dsh.store.base import (
    SessionHeader,
    SessionLog,
    UnreadableSession,
    decode_header,
    encode_header,
    new_header,
    now_millis,
    oldest_first,
)
from dsh.store.database_file import damaged_database, database_exists, is_damage
from dsh.store.derived import import_dir, live_text_path
from dsh.store.group_commit import GroupFsync
from dsh.store.integrity import check_row, seal
from dsh.store.locking import WriteLock, acquire_write_lock
from dsh.store.repair import repair_at_open
from dsh.store.sqlite_rows import decode_rows
from dsh.store.sqlite_schema import (
    INDEX_ONLY,
    MIGRATIONS,
    check_known,
    latest_settings_query,
    migrate,
)
from dsh.store.wal import WRITER_BACKSTOP_PAGES, WalUpkeep, fsync_wal

DB_NAME = "dsh.sqlite3"
_INSERT = "INSERT INTO events VALUES (?, ?, ?)"


def _connect(path: Path) -> sqlite3.Connection:
    database_exists(path)
    try:
        make_private_directory(path.parent)
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"cannot open session database {path}: {exc}") from exc
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=5000")
        migrate(db)
    except (StoreError, sqlite3.Error) as exc:
        db.close()
        if is_damage(exc):
            raise damaged_database(path, exc) from exc
        raise StoreError(f"cannot open session database {path}: {exc}") from exc
    return db


def connect(path: Path) -> sqlite3.Connection:
    """A connection to the session database at ``path``, set up and migrated as the store's own
    (for tools that work on the rows directly: ``dsh sessions repair``)."""
    return _connect(path)


def connect_reader(path: Path) -> sqlite3.Connection:
    """A connection that only reads: the store's own, unless the database's directory cannot be
    written (a read-only mount, another user's home). There SQLite cannot create the WAL's
    shared-memory file and refuses a WAL database, so it is opened read-only instead: as it is
    when its ``-wal`` and ``-shm`` files exist, else as immutable (no WAL is left to read, and
    no writer can start one in that directory). Refused as ``_connect`` refuses otherwise."""
    try:
        return _connect(path)
    except StoreError:
        if os.access(path.parent, os.W_OK) or not path.is_file():
            raise
    wal = path.with_name(path.name + "-wal")
    shm = path.with_name(path.name + "-shm")
    mode = "mode=ro" if wal.exists() and shm.exists() else "immutable=1"
    if mode == "immutable=1" and wal.exists() and wal.stat().st_size:
        raise StoreError(
            f"cannot open session database {path}: its directory is read-only and it has a "
            f"write-ahead log ({wal.name}) without its {shm.name}"
        )
    try:
        db = sqlite3.connect(f"file:{quote(str(path))}?{mode}", uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open session database {path} read-only: {exc}") from exc
    try:
        applied = {row[0] for row in db.execute("SELECT name FROM schema_migrations")}
        check_known(applied)
        if applied | INDEX_ONLY != {name for name, _ in MIGRATIONS} | INDEX_ONLY:
            raise StoreError("its schema is older than this dsh and cannot be migrated read-only")
    except (StoreError, sqlite3.Error) as exc:
        db.close()
        if is_damage(exc):
            raise damaged_database(path, exc) from exc
        raise StoreError(f"cannot open session database {path} read-only: {exc}") from exc
    return db


class SqliteSessionLog(SessionLog):
    def __init__(
        self,
        db: sqlite3.Connection | None,
        header: SessionHeader,
        events: list[Event],
        *,
        lock: WriteLock | None,
        resumed: bool,
        path: Path | None = None,
    ) -> None:
        super().__init__(header, events, writable=lock is not None, resumed=resumed)
        self._db = db
        self._lock = lock
        self._cursor = db.cursor() if db is not None else None  # reused by every append
        self._fsync: GroupFsync | None = None
        self._wal: WalUpkeep | None = None
        if db is not None and path is not None:
            self._fsync, self._wal = _group_commit(db, path, header.id)

    def _write_lines(self, lines: list[bytes], *, durable: bool) -> None:
        assert self._db is not None and self._cursor is not None
        assert self._fsync is not None and self._wal is not None
        if self._fsync.error is not None:
            self._mark_broken(f"fsync failed: {self._fsync.error}")
            raise StorageWriteError(f"cannot write session {self.id}: fsync failed")
        first = len(self.events)
        try:
            if len(lines) == 1:  # autocommit: one statement is one transaction
                self._cursor.execute(_INSERT, (self.id, first, seal(lines[0])))
            else:
                rows = [(self.id, first + i, seal(line)) for i, line in enumerate(lines)]
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(_INSERT, rows)
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
        except sqlite3.Error as exc:
            raise StorageWriteError(
                f"cannot write session {self.id}: {exc}; {self.not_committed(len(lines))}"
            ) from exc
        self._wal.committed(sum(map(len, lines)))
        self._fsync.wrote(durable=durable)  # durable: the WAL is fsynced in the background

    def _sync(self) -> None:
        """Everything committed so far reaches stable storage before this returns."""
        if self._fsync is None:
            return
        try:
            self._fsync.sync()
        except OSError as exc:
            self._mark_broken(f"fsync failed: {exc}")
            raise StorageWriteError(f"cannot sync session {self.id}: {exc}") from exc

    def _close(self) -> None:
        if self._fsync is not None:
            self._fsync.close()
        if self._wal is not None:
            self._wal.close()
        if self._db is not None:
            self._db.close()
        if self._lock is not None:
            self._lock.release()


def _group_commit(
    db: sqlite3.Connection, path: Path, session_id: str
) -> tuple[GroupFsync, WalUpkeep]:
    """The writer's WAL upkeep (``dsh.store.wal``): its fsync thread, which also checkpoints,
    with the connection's own inline checkpoint left as a backstop only."""
    db.execute(f"PRAGMA wal_autocheckpoint={WRITER_BACKSTOP_PAGES}")
    page_size = int(db.execute("PRAGMA page_size").fetchone()[0])
    wal = path.with_name(path.name + "-wal")
    upkeep = WalUpkeep(path, page_size=page_size)
    return GroupFsync(lambda: fsync_wal(wal), session_id, after=upkeep.checkpoint_if_due), upkeep


class SqliteStore:
    """Session logs in one SQLite database under ``home``."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.path = self.home / DB_NAME
        self.lock_dir = self.home / "locks"

    def lock_path(self, session_id: str) -> Path:
        """The session's writer lock file (``dsh.store.locking``: its holder's pid in it)."""
        return self.lock_dir / f"{session_id}.lock"

    def write_lock(self, session_id: str) -> WriteLock:
        """The session's single-writer lock (``dsh sessions repair`` holds it while it works)."""
        return self._lock(session_id)

    def _lock(self, session_id: str) -> WriteLock:
        try:
            make_private_directory(self.lock_dir)
        except OSError as exc:
            raise StoreError(f"cannot create {self.lock_dir}: {exc.strerror}") from exc
        return acquire_write_lock(self.lock_path(session_id), session_id)

    def create(
        self,
        *,
        cwd: str,
        parent_session: str | None = None,
        seed: Sequence[Event] = (),
        session_id: str | None = None,
        created_at: int | None = None,
        seed_length: int | None = None,
    ) -> SqliteSessionLog:
        header = new_header(
            cwd=cwd,
            parent_session=parent_session,
            seed_length=len(seed) if seed_length is None else seed_length,
            session_id=session_id,
            created_at=created_at,
        )
        check_contiguous(seed)
        db = _connect(self.path)
        lock = self._lock(header.id)
        try:
            db.execute("PRAGMA synchronous=FULL")
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?)",
                (header.id, encode_header(header), header.created_at),
            )
            db.executemany(
                "INSERT INTO events VALUES (?, ?, ?)",
                [(header.id, e.seq, seal(encode_event(e))) for e in seed],
            )
            db.execute("COMMIT")
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            lock.release()
            db.close()
            if is_damage(exc):
                raise damaged_database(self.path, exc) from exc
            raise StoreError(f"cannot create session in {self.path}: {exc}") from exc
        return SqliteSessionLog(
            db, header, list(seed), lock=lock, resumed=bool(seed), path=self.path
        )

    def open(self, session_id: str, *, writable: bool = False) -> SqliteSessionLog:
        if not database_exists(self.path):
            raise SessionNotFoundError(f"no session {session_id!r} in {self.path}")
        db = _connect(self.path) if writable else connect_reader(self.path)
        try:
            row = _read_header(db, self.path, session_id)
            if row is None:
                raise SessionNotFoundError(f"no session {session_id!r} in {self.path}")
            lock = self._lock(session_id) if writable else None
            try:
                checked = _check_after_crash(db, self.path, lock)
                header = decode_header(bytes(row[0]), where=f"{self.path}: session {session_id}")
                rows = db.execute(
                    "SELECT seq, body FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
                )
                events = decode_rows(rows, session_id)  # as they are read: a batch held at once
                log = SqliteSessionLog(
                    db if writable else None,
                    header,
                    events,
                    lock=lock,
                    resumed=True,
                    path=self.path,
                )
                if checked is not None:
                    log.warnings.append(checked)
            except BaseException:
                if lock is not None:
                    lock.release()
                raise
        except sqlite3.DatabaseError as exc:  # a damaged page: one line, never a traceback
            db.close()
            raise LogCorruptError(
                f"{self.path}: session {session_id}: SQLite cannot read it ({exc})"
            ) from exc
        except BaseException:
            db.close()
            raise
        if not writable:
            db.close()
        if lock is not None:
            live = live_text_path(self.home, session_id)
            crashed = lock.unclean_holder is not None
            imported = import_dir(self.home, session_id).is_dir()
            repair_at_open(
                log, now_ms=now_millis(), live_path=live, crashed=crashed, imported=imported
            )
        return log

    def remove_session(self, session_id: str) -> None:
        """Delete a session's rows (``dsh sessions migrate``, once its copy is verified)."""
        db = _connect(self.path)
        try:
            db.execute("PRAGMA synchronous=FULL")
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot remove session {session_id} from {self.path}: {exc}") from exc
        finally:
            db.close()

    def unreadable(self) -> list[UnreadableSession]:
        return [u for u in self._scan() if isinstance(u, UnreadableSession)]

    def _scan(self) -> list[SessionHeader | UnreadableSession]:
        if not database_exists(self.path):
            return []
        db = connect_reader(self.path)
        try:
            rows = db.execute("SELECT id, header FROM sessions ORDER BY id").fetchall()
        except sqlite3.DatabaseError as exc:  # the sessions table: no session can be named
            if is_damage(exc):
                raise damaged_database(self.path, exc) from exc
            raise StoreError(f"cannot list the sessions in {self.path}: {exc}") from exc
        finally:
            db.close()
        return [self._header(session_id, raw) for session_id, raw in rows]

    def _header(self, session_id: object, raw: bytes) -> SessionHeader | UnreadableSession:
        try:
            return decode_header(bytes(raw), where=f"{self.path}: session {session_id}")
        except LogCorruptError as exc:  # a header: `dsh sessions repair` keeps nothing
            unheaded = isinstance(exc, HeaderCorruptError)
            return UnreadableSession(str(session_id), str(exc), repairable=not unheaded)

    def list(self) -> list[SessionHeader]:
        return oldest_first(h for h in self._scan() if isinstance(h, SessionHeader))

    def latest_settings(self, session_id: str) -> SessionSettingsEvent | None:
        """The session's last ``session/settings`` event, found in the settings index (one
        lookup, however far it is from the log's end); its seal is checked and a bad row raises
        ``LogCorruptError`` naming its seq (a full ``open`` then says what is wrong)."""
        if not database_exists(self.path):
            raise SessionNotFoundError(f"no session {session_id!r} in {self.path}")
        db = connect_reader(self.path)
        try:
            if _read_header(db, self.path, session_id) is None:
                raise SessionNotFoundError(f"no session {session_id!r} in {self.path}")
            row = db.execute(latest_settings_query(db), (session_id,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise LogCorruptError(
                f"{self.path}: session {session_id}: SQLite cannot read it ({exc})"
            ) from exc
        finally:
            db.close()
        if row is None:
            return None
        seq, body = int(row[0]), bytes(row[1])
        where = f"session {session_id}: "
        event = decode_event_line(check_row(body, seq=seq, where=where), line=seq)
        if not isinstance(event, SessionSettingsEvent) or event.seq != seq:
            raise LogCorruptError(f"{where}seq {seq}: not the session/settings event", seq=seq)
        return event

    def header_of(self, session_id: str) -> SessionHeader | UnreadableSession | None:
        """What ``list`` or ``unreadable`` say of ``session_id``, its row alone read."""
        if not database_exists(self.path):
            return None
        db = connect_reader(self.path)
        try:
            row = _read_header(db, self.path, session_id)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot read session {session_id} in {self.path}: {exc}") from exc
        finally:
            db.close()
        return None if row is None else self._header(session_id, row[0])


def _read_header(db: sqlite3.Connection, path: Path, session_id: str) -> tuple[bytes] | None:
    """The session's header row; a sessions table SQLite cannot read is a damaged database,
    which ``dsh sessions repair`` cannot mend (it is a session's event rows that it cuts)."""
    try:
        row: tuple[bytes] | None = db.execute(
            "SELECT header FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
    except sqlite3.DatabaseError as exc:
        if is_damage(exc):
            raise damaged_database(path, exc) from exc
        raise
    return row


def _check_after_crash(db: sqlite3.Connection, path: Path, lock: WriteLock | None) -> str | None:
    """After an unclean shutdown of the session's last writer: ``PRAGMA quick_check``, as one
    line (None when the last writer closed cleanly, or when only reading)."""
    if lock is None or lock.unclean_holder is None:
        return None
    try:
        problems = [" ".join(str(row[0]).split()) for row in db.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        problems = [str(exc)]
    what = f"{path}: the last writer (pid {lock.unclean_holder}) stopped without closing;"
    if problems == ["ok"]:
        return f"{what} PRAGMA quick_check: ok"
    shown = "; ".join(problems[:3]) + ("; …" if len(problems) > 3 else "")
    return f"{what} PRAGMA quick_check found {len(problems)} problem(s): {shown}"
