"""The JSONL store's settings record: where a session's last ``session/settings`` line is, so
reading a stored session's recorded settings (``JsonlStore.latest_settings``, before ``dsh run
--session`` and ``dsh --resume`` open it) costs about the same however far that line is from the
log's end.

``<home>/cache/settings/<id>.settings`` (``dsh.store.derived``) holds one small JSON object: the
part of the log it covers — the bytes before ``covered``, a line's end, named by the file's inode
and the fingerprints of the header line and of the line that ends there (the *anchor*) — and the
offset, size and fingerprint of the last settings line in that part (``line`` -1: none). It is a
cache, so it only ever says what a search of those bytes finds, and it is believed only while
the log still begins with them (the same inode, at least that long, the same header, anchor and
settings line where the record says); otherwise it is ignored and made again from the log.

A read searches backwards only from the end of the log's last complete line (a torn last line
is not a line: a load drops it) down to ``covered``: what was appended since the record was
made. A read that searched writes the record again for the whole log, and so does a writer when
it closes the log, from the settings line it appended last or, if it appended none, from the
part it opened (the record it found covers it, or it is searched once). A record is written to
a temporary file renamed over it, never fsynced, and any error writing it is ignored: a record
is true of the bytes it names, so one lost, one an older one replaced in a race, or one naming
bytes the log lost (a power cut before the log's fsync) is only searched past or ignored.

Every event line starts ``{"type":"<type>",`` (``dsh.store.line_search``), so a log whose lines
were written by hand in another key order is not searched correctly; a load reads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import msgspec

from dsh.config.private_dirs import make_private_directory
from dsh.errors import DshError, HeaderCorruptError, LogCorruptError, SessionNotFoundError
from dsh.events import SessionSettingsEvent, decode_event_line, event_type_name
from dsh.store.integrity import check_line
from dsh.store.line_search import (
    last_complete_line,
    last_line,
    lines_before,
    read_line,
    type_prefix,
)

SETTINGS_PREFIX = type_prefix(event_type_name(SessionSettingsEvent))
"""A newline and the start of a ``session/settings`` line."""
SETTINGS_START = SETTINGS_PREFIX[1:]
FORMAT = 1

Found = tuple[int, bytes]
"""A settings line: its offset in the log and its bytes, newline included."""


class SettingsRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    format: int
    inode: int
    header: str
    """Fingerprint of the header line (with its newline)."""
    covered: int
    anchor: str
    """Fingerprint of the line ending at ``covered``, its newline included."""
    anchor_size: int
    line: int = -1
    line_size: int = 0
    line_hash: str = ""


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(SettingsRecord)


@dataclass(frozen=True, slots=True)
class _Log:
    """What a record is checked against: the log file as it is now."""

    fd: int
    inode: int
    header: str
    header_end: int
    anchor_start: int
    end: int
    """The end of the last complete line."""


def latest_settings(path: Path, record_path: Path) -> SessionSettingsEvent | None:
    """The last ``session/settings`` event of the log at ``path`` among its complete lines,
    found through the record at ``record_path`` (made again when the log grew past it or it
    does not hold). The line found is checked (seal, decode); ``LogCorruptError`` names it."""
    try:
        handle = path.open("rb")
    except FileNotFoundError as exc:
        raise SessionNotFoundError(f"no session log {path}") from exc
    with handle:
        log = _look(handle.fileno(), path)
        held = _held(log, _load(record_path))
        found = _latest(log, held, log.end)
        event = _decode(log.fd, path, found)
        if held is None or held.covered < log.end:
            _save(record_path, _record(log, found))
    return event


def after_writer(path: Path, record_path: Path, *, opened: int, appended: Found | None) -> None:
    """Write the record of the log at ``path`` as its one writer closes it: ``appended`` is
    the last settings line it wrote (None: none), ``opened`` the log's size when it opened it.
    Any error only leaves the record as it was."""
    with contextlib.suppress(OSError, DshError), path.open("rb") as handle:
        log = _look(handle.fileno(), path)
        record = _load(record_path)
        held = _held(log, record)
        found = appended if appended is not None else _latest(log, held, opened)
        new = _record(log, found)
        if new != record:
            _save(record_path, new)


def _look(fd: int, path: Path) -> _Log:
    st = os.fstat(fd)
    header = os.pread(fd, 4096, 0)
    cut = header.find(b"\n")
    header = header[: cut + 1] if cut >= 0 else read_line(fd, 0)
    if not header.endswith(b"\n"):
        raise HeaderCorruptError(f"{path}: line 1: missing session header", line=1)
    start, end = last_complete_line(fd, st.st_size)
    return _Log(fd, st.st_ino, _fingerprint(header), len(header), start, end)


@dataclass(frozen=True, slots=True)
class _Held:
    covered: int
    line: Found | None


def _held(log: _Log, record: SettingsRecord | None) -> _Held | None:
    """What ``record`` says of ``log``, if the log still begins with the bytes it covers."""
    if record is None or record.format != FORMAT:
        return None
    if (record.inode, record.header) != (log.inode, log.header):
        return None
    if not log.header_end <= record.covered <= log.end or record.anchor_size > record.covered:
        return None
    anchor = os.pread(log.fd, record.anchor_size, record.covered - record.anchor_size)
    if len(anchor) != record.anchor_size or _fingerprint(anchor) != record.anchor:
        return None
    if record.line < 0:
        return _Held(record.covered, None)
    if record.line < log.header_end or record.line + record.line_size > record.covered:
        return None
    line = os.pread(log.fd, record.line_size, record.line)
    if _fingerprint(line) != record.line_hash or not line.endswith(b"\n"):
        return None
    return _Held(record.covered, (record.line, line))


def _latest(log: _Log, held: _Held | None, ceiling: int) -> Found | None:
    """The last settings line starting before ``ceiling`` (a line's end): searched for
    backwards from there down to what ``held`` covers (the header's end without it)."""
    floor = held.covered if held is not None else log.header_end
    found = (
        last_line(log.fd, SETTINGS_PREFIX, floor=floor, ceiling=ceiling)
        if floor < ceiling
        else None
    )
    if found is None and held is not None:
        return held.line
    return found


def _record(log: _Log, found: Found | None) -> SettingsRecord:
    anchor = os.pread(log.fd, log.end - log.anchor_start, log.anchor_start)
    if found is None:
        line, size, digest = -1, 0, ""
    else:
        line, size, digest = found[0], len(found[1]), _fingerprint(found[1])
    return SettingsRecord(
        format=FORMAT,
        inode=log.inode,
        header=log.header,
        covered=log.end,
        anchor=_fingerprint(anchor),
        anchor_size=len(anchor),
        line=line,
        line_size=size,
        line_hash=digest,
    )


def _decode(fd: int, path: Path, found: Found | None) -> SessionSettingsEvent | None:
    """The event of the settings line ``found``; the line's number is counted only to name it
    in an error."""
    if found is None:
        return None
    start, line = found
    with contextlib.suppress(LogCorruptError):
        event = decode_event_line(check_line(line[:-1], number=0, where=""), line=0)
        if isinstance(event, SessionSettingsEvent):
            return event
    number = lines_before(fd, start) + 1
    event = decode_event_line(check_line(line[:-1], number=number, where=f"{path}: "), line=number)
    if not isinstance(event, SessionSettingsEvent):  # its line begins as one: never so
        raise LogCorruptError(f"{path}: line {number}: not a session/settings event", line=number)
    return event


def _load(record_path: Path) -> SettingsRecord | None:
    try:
        return _decoder.decode(record_path.read_bytes())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def _save(record_path: Path, record: SettingsRecord) -> None:
    """Replace the record whole; any error leaves the one there (or none)."""
    temporary = record_path.with_name(f".{record_path.name}.{os.getpid()}-{secrets.token_hex(4)}")
    try:
        make_private_directory(record_path.parent)
        temporary.write_bytes(_encoder.encode(record))
        os.replace(temporary, record_path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()


def _fingerprint(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()
