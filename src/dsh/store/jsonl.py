"""The default store: one JSONL file per session (docs/architecture.md, "The session log").

``<home>/sessions/<id>/session.jsonl``: line 1 is the session header, then one event per line in
seq order. A last line without its newline is a torn write from a crash: it is dropped with a
warning (and, when opening for writing, moved aside to ``session.jsonl.torn`` so the bytes are not
lost). A bad line anywhere else refuses the load and names its line number. Every line carries a
CRC32 seal (``dsh.store.integrity``), so a flipped byte refuses the load too, naming the line.
A directory whose log names another session (a copy, ``cp -r ID ID.bak``) is never opened for
writing: its appends would be another writer of that session. A session's last
``session/settings`` line is found through its settings record (``dsh.store.settings_record``),
which a writer writes as it closes the log.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from dsh.config.private_dirs import make_private_directory
from dsh.errors import (
    HeaderCorruptError,
    LogCorruptError,
    SessionNotFoundError,
    StorageWriteError,
    StoreError,
    UnknownEventTypeError,
)
from dsh.events import (
    Event,
    SessionSettingsEvent,
    check_contiguous,
    decode_event_chunks,
    encode_event,
)
from dsh.store import settings_record
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
from dsh.store.derived import import_dir, live_text_path, settings_record_path
from dsh.store.fd_write import write_all
from dsh.store.group_commit import GroupFsync
from dsh.store.integrity import check_line, sealed_lines, unseal_counted
from dsh.store.locking import WriteLock, acquire_write_lock
from dsh.store.repair import repair_at_open

LOG_NAME = "session.jsonl"
LOCK_NAME = "session.lock"
TORN_NAME = "session.jsonl.torn"


class JsonlSessionLog(SessionLog):
    def __init__(
        self,
        path: Path,
        header: SessionHeader,
        events: list[Event],
        *,
        lock: WriteLock | None,
        resumed: bool,
        warnings: Sequence[str] = (),
        record: Path | None = None,
    ) -> None:
        super().__init__(
            header, events, writable=lock is not None, resumed=resumed, warnings=warnings
        )
        self.path = path
        self._lock = lock
        self._fd: int | None = None
        self._fsync: GroupFsync | None = None
        self._record = record
        """The settings record this writer writes as it closes (``dsh.store.settings_record``)."""
        self._settings: tuple[int, bytes] | None = None
        """The offset and bytes of the last settings line this writer wrote."""
        self._opened = 0
        """The log's size when this writer opened it."""
        if lock is not None:
            try:
                self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            except OSError as exc:
                lock.release()
                raise StoreError(f"cannot open {path} for writing: {exc.strerror}") from exc
            self._size = os.fstat(self._fd).st_size
            self._opened = self._size
            fd = self._fd
            self._fsync = GroupFsync(lambda: os.fsync(fd), header.id)

    def _write_lines(self, lines: list[bytes], *, durable: bool) -> None:
        assert self._fd is not None and self._fsync is not None
        if self._fsync.error is not None:
            self._mark_broken(f"fsync failed: {self._fsync.error}")
            raise StorageWriteError(f"cannot write {self.path}: fsync failed: {self._fsync.error}")
        data = sealed_lines(lines)
        try:
            written = os.write(self._fd, data)  # one syscall for the batch, unless it is short
            while written < len(data):
                written += os.write(self._fd, memoryview(data)[written:])
        except OSError as exc:
            self._undo_partial_write()
            raise StorageWriteError(
                f"cannot write {self.path}: {exc.strerror or exc}; {self.not_committed(len(lines))}"
            ) from exc
        for line in lines:  # a plain loop: a third of any()'s cost on a one-event batch
            if line.startswith(settings_record.SETTINGS_START):
                at = data.rfind(settings_record.SETTINGS_PREFIX) + 1  # 0: the batch's first
                self._settings = (self._size + at, data[at : data.index(b"\n", at) + 1])
                break
        self._size += len(data)
        self._fsync.wrote(durable=durable)

    def _undo_partial_write(self) -> None:
        """Cut a half-written batch so later appends never follow garbage."""
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, self._size)
        except OSError as exc:
            self._mark_broken(f"a failed write could not be undone ({exc.strerror})")

    def _sync(self) -> None:
        if self._fsync is None:
            return
        try:
            self._fsync.sync()
        except OSError as exc:
            self._mark_broken(f"fsync failed: {exc}")
            raise StorageWriteError(f"cannot sync {self.path}: {exc.strerror or exc}") from exc

    def _close(self) -> None:
        if self._fsync is not None:
            self._fsync.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            if self._record is not None and self._broken is None:  # still the one writer
                settings_record.after_writer(
                    self.path, self._record, opened=self._opened, appended=self._settings
                )
            self._lock.release()


class JsonlStore:
    """Session logs as JSONL files under ``<home>/sessions``."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.root = self.home / "sessions"

    def session_dir(self, session_id: str) -> Path:
        return self.root / session_id

    def log_path(self, session_id: str) -> Path:
        return self.session_dir(session_id) / LOG_NAME

    def lock_path(self, session_id: str) -> Path:
        """The session's writer lock file (``dsh.store.locking``: its holder's pid in it)."""
        return self.session_dir(session_id) / LOCK_NAME

    def latest_settings(self, session_id: str) -> SessionSettingsEvent | None:
        """The session's last ``session/settings`` event among its complete lines, found
        through its settings record without reading the rest of the log
        (``dsh.store.settings_record``); the line's seal is checked and a bad one raises
        ``LogCorruptError`` naming it (a full ``open`` then says what is wrong)."""
        if "/" in session_id or session_id in {"", ".", ".."}:
            raise SessionNotFoundError(f"no session {session_id!r} in {self.root}")
        record = settings_record_path(self.home, session_id)
        return settings_record.latest_settings(self.log_path(session_id), record)

    def create(
        self,
        *,
        cwd: str,
        parent_session: str | None = None,
        seed: Sequence[Event] = (),
        session_id: str | None = None,
        created_at: int | None = None,
        seed_length: int | None = None,
    ) -> JsonlSessionLog:
        header = new_header(
            cwd=cwd,
            parent_session=parent_session,
            seed_length=len(seed) if seed_length is None else seed_length,
            session_id=session_id,
            created_at=created_at,
        )
        directory = self.session_dir(header.id)
        try:  # a directory without a log is reused: a migration or a removal keeps the other
            # files a session directory held (repair copies, a torn tail) and so the directory
            make_private_directory(directory)
        except OSError as exc:
            raise StoreError(
                f"cannot create session directory {directory}: {_reason(exc)}"
            ) from exc
        if (directory / LOG_NAME).exists():  # the new log is created exclusively below, too
            raise StoreError(f"a session {header.id} already exists in {directory}")
        check_contiguous(seed)
        lines = [encode_header(header), *(encode_event(e) for e in seed)]
        body = sealed_lines(lines)
        path = directory / LOG_NAME
        lock = acquire_write_lock(self.lock_path(header.id), header.id)
        try:
            _write_new_file(path, body)
        except FileExistsError:
            lock.release()
            raise StoreError(f"a session {header.id} already exists in {directory}") from None
        except OSError as exc:
            lock.release()
            raise StoreError(f"cannot create {path}: {_reason(exc)}") from exc
        record = settings_record_path(self.home, header.id)
        return JsonlSessionLog(
            path, header, list(seed), lock=lock, resumed=bool(seed), record=record
        )

    def open(self, session_id: str, *, writable: bool = False) -> JsonlSessionLog:
        path = self.log_path(session_id)
        if "/" in session_id or session_id in {"", ".", ".."} or not path.exists():
            raise SessionNotFoundError(f"no session {session_id!r} in {self.root}")
        lock = acquire_write_lock(self.lock_path(session_id), session_id) if writable else None
        try:
            header, events, torn, warnings = _load(path)
            if lock is not None and header.id != session_id:  # appends would land in a copy
                raise StoreError(f"{path}: {_copied_log(header.id, session_id, self.root)}")
            if torn and lock is not None:
                _move_torn_tail(path, torn)
            log = JsonlSessionLog(
                path,
                header,
                events,
                lock=lock,
                resumed=True,
                warnings=warnings,
                record=settings_record_path(self.home, session_id),
            )
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        if lock is not None:
            live = live_text_path(self.home, session_id)
            crashed = lock.unclean_holder is not None
            imported = import_dir(self.home, session_id).is_dir()
            repair_at_open(
                log, now_ms=now_millis(), live_path=live, crashed=crashed, imported=imported
            )
        return log

    def unreadable(self) -> list[UnreadableSession]:
        return [u for u in self._scan() if isinstance(u, UnreadableSession)]

    def _scan(self) -> list[SessionHeader | UnreadableSession]:
        """The header of every session directory, or why it cannot be read (by directory)."""
        if not self.root.is_dir():
            return []
        found = (self._header_in(directory) for directory in sorted(self.root.iterdir()))
        return [header for header in found if header is not None]

    def header_of(self, session_id: str) -> SessionHeader | UnreadableSession | None:
        """What ``list`` or ``unreadable`` say of ``session_id``, its log's first line alone
        read; None: no such session."""
        if "/" in session_id or "\x00" in session_id or session_id in {"", ".", ".."}:
            return None  # no directory of the sessions' is named so
        return self._header_in(self.session_dir(session_id))

    def _header_in(self, directory: Path) -> SessionHeader | UnreadableSession | None:
        """The header of the session in ``directory``, or why it cannot be read; None if the
        directory holds no log (one a migration or a removal left)."""
        path = directory / LOG_NAME
        if not path.exists():
            return None
        try:
            with path.open("rb") as handle:
                first = handle.readline()
        except OSError as exc:  # not for `dsh sessions repair`: it could not read it either
            why = f"cannot read {path}: {_reason(exc)}"
            return UnreadableSession(directory.name, why, repairable=False)
        try:
            if not first.endswith(b"\n"):
                raise HeaderCorruptError(f"{path}: line 1: missing session header", line=1)
            header = decode_header_line(first.rstrip(b"\n"), path)
        except LogCorruptError as exc:  # a header: nothing to keep without it
            unheaded = isinstance(exc, HeaderCorruptError)
            return UnreadableSession(directory.name, str(exc), exc.line, repairable=not unheaded)
        if header.id == directory.name:
            return header
        # a copy (``cp -r ID ID.bak``) would list the same id twice
        why = _copied_log(header.id, directory.name, self.root)
        return UnreadableSession(directory.name, why, repairable=False)

    def list(self) -> list[SessionHeader]:
        return oldest_first(h for h in self._scan() if isinstance(h, SessionHeader))


READ_CHUNK = 1 << 18
"""Bytes read (and unsealed, and decoded) at a time when a log loads. 256 KiB: at 1 MiB the
transient pieces of each chunk's unsealing left the heap fragmented among the decoded events
(`benchmarks/open_memory.py`, 100,000 events: 1.52x the file held against 1.48x), at no
measurable speed difference (`benchmarks/sessions_cli.py`)."""


def _load(path: Path) -> tuple[SessionHeader, list[Event], bytes, list[str]]:
    """Header, events, torn tail and warnings of the log at ``path``, read a chunk at a time so
    the peak is about the decoded events, not the file and its unsealed copy besides."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {_reason(exc)}") from exc
    with handle:
        try:
            first = handle.readline()
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {_reason(exc)}") from exc
        if not first.endswith(b"\n"):
            raise HeaderCorruptError(f"{path}: line 1: missing session header", line=1)
        header = decode_header_line(first[:-1], path)
        torn: list[bytes] = []
        try:
            events = decode_event_chunks(_event_chunks(handle, path, torn), first_line=2)
        except UnknownEventTypeError as exc:  # keep the class: callers tell "newer format" apart
            raise UnknownEventTypeError(
                exc.event_type, seq=exc.seq, line=exc.line, context=str(path)
            ) from exc
        except LogCorruptError as exc:
            message = str(exc)
            if not message.startswith(f"{path}: "):  # a line check names the file already
                message = f"{path}: {message}"
            raise LogCorruptError(message, line=exc.line, seq=exc.seq) from exc
    tail = b"".join(torn)  # everything after the last newline is a torn write
    return header, events, tail, [torn_tail_warning(path, len(tail))] if tail else []


def torn_tail_warning(path: Path, size: int) -> str:
    """What a load of the log at ``path`` says of the ``size`` bytes after its last newline."""
    return f"{path}: dropped a torn last line ({size} bytes) left by an interrupted write"


def _event_chunks(handle: BinaryIO, path: Path, torn: list[bytes]) -> Iterator[tuple[bytes, int]]:
    """The event lines after the header, unsealed, as (complete lines, line count) pieces of
    about ``READ_CHUNK`` bytes; what follows the last newline is left in ``torn``."""
    line = 2
    while True:
        try:
            chunk = handle.read(READ_CHUNK)
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {_reason(exc)}") from exc
        if not chunk:
            return
        cut = chunk.rfind(b"\n") + 1
        if not cut:  # a line longer than a chunk: keep reading until it ends
            torn.append(chunk)
            continue
        data = b"".join([*torn, chunk]) if torn else chunk
        end = len(data) - (len(chunk) - cut)
        torn[:] = [data[end:]] if end < len(data) else []
        body, count = unseal_counted(data, 0, end, first_line=line, where=f"{path}: ")
        yield body, count
        line += count


def decode_header_line(raw: bytes, path: Path) -> SessionHeader:
    """The header of the log at ``path`` from its first line (``raw``, without the newline)."""
    try:
        canonical = check_line(raw, number=1, where=f"{path}: ")
    except LogCorruptError as exc:  # a header line that is not whole: nothing to salvage
        raise HeaderCorruptError(str(exc), line=1) from exc
    return decode_header(canonical, where=f"{path}: line 1")


def _move_torn_tail(path: Path, torn: bytes) -> None:
    """Keep the torn bytes beside the log, then cut them off so appends start on a clean line."""
    with (path.parent / TORN_NAME).open("ab") as aside:
        aside.write(torn + b"\n")
        aside.flush()
        os.fsync(aside.fileno())
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size - len(torn))
        handle.flush()
        os.fsync(handle.fileno())


def _write_new_file(path: Path, body: bytes) -> None:
    """Write a new log whole or not at all: a process killed halfway through writing ``body``
    leaves a stray temporary file, never a log that holds part of it. The caller holds the
    session's lock, so no other creator renames over ``path`` between the check and the rename."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.new")
    try:
        write_synced(temporary, body, exclusive=True)
        if path.exists():
            raise FileExistsError(errno.EEXIST, "File exists", str(path))
        os.rename(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    fsync_dir(path.parent)


def write_synced(path: Path, body: bytes, *, exclusive: bool) -> None:
    """Write ``body`` as the whole of ``path`` and fsync it (``exclusive``: it must be new)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, 0o644)
    try:
        write_all(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make a file created or renamed in ``directory`` survive a power loss."""
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _copied_log(logged: str, directory: str, root: Path) -> str:
    return (
        f"its log is session {logged}, not {directory} (a copied or renamed "
        f"directory: give it back its name, or move it out of {root})"
    )


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)
