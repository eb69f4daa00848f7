"""The store seam: one small protocol, and the log logic every backend shares.

A backend only moves bytes (``_write_lines``, ``_sync``, ``_close``); ``SessionLog`` owns what
must be identical everywhere: seq checks, the lossless encoding, which events force an fsync, and
refusing appends on a read-only or broken log.
"""

from __future__ import annotations

import secrets
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import msgspec

from dsh.errors import (
    AmbiguousSessionError,
    EventValidationError,
    HeaderCorruptError,
    LogCorruptError,
    ReadOnlySessionError,
    SessionNotFoundError,
    StorageWriteError,
    UsageError,
)
from dsh.events import (
    CompactionEndEvent,
    Event,
    SessionSettingsEvent,
    StepEndEvent,
    TurnEndEvent,
    encode_event,
    validate_event_shape,
)

FORMAT_VERSION = 1

DURABLE_EVENT_CLASSES = (StepEndEvent, TurnEndEvent, CompactionEndEvent)
"""Appending one of these requests a background fsync (docs/architecture.md, "Durability");
other appends ride on the next one, or on ``sync()``/``close()``."""
_DURABLE_TYPES = frozenset(DURABLE_EVENT_CLASSES)


class SessionHeader(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    omit_defaults=True,
    rename="camel",
    forbid_unknown_fields=True,
):
    """Line 1 of a JSONL log (and the sessions row of SQLite)."""

    type: Literal["session"]
    version: int
    id: str
    cwd: str
    created_at: int
    """Epoch milliseconds."""
    parent_session: str | None = None
    seed_length: int | None = None


@dataclass(frozen=True, slots=True)
class UnreadableSession:
    """A stored session whose header cannot be decoded: listed, never silently left out."""

    id: str
    reason: str
    line: int | None = None
    repairable: bool = True
    """False where ``dsh sessions repair`` cannot help (a copied directory: its log is whole)."""


_header_encoder = msgspec.json.Encoder()
_header_decoder = msgspec.json.Decoder(SessionHeader)


def encode_header(header: SessionHeader) -> bytes:
    return _header_encoder.encode(header)


def new_header(
    *,
    cwd: str,
    parent_session: str | None,
    seed_length: int,
    session_id: str | None = None,
    created_at: int | None = None,
) -> SessionHeader:
    """The header of a new session: created now with a fresh id unless told otherwise (an
    imported session keeps its original creation time and may be given an id)."""
    if not cwd.isascii():  # a path of non-UTF-8 bytes arrives as lone surrogates (PEP 383)
        try:
            cwd.encode("utf-8")
        except UnicodeEncodeError:
            shown = cwd.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise UsageError(
                f"the workspace {shown} is not a UTF-8 path, which a session log cannot record; "
                "run dsh in a directory whose path is UTF-8 (or pass --cwd)"
            ) from None
    created = _creation_millis() if created_at is None else created_at
    return SessionHeader(
        type="session",
        version=FORMAT_VERSION,
        id=session_id if session_id is not None else new_session_id(created),
        cwd=cwd,
        created_at=created,
        parent_session=parent_session,
        seed_length=seed_length if parent_session is not None else None,
    )


def oldest_first(headers: Iterable[SessionHeader]) -> list[SessionHeader]:
    """``headers`` in creation order, ties by id (what every store's ``list`` returns: an id
    given on import, ``--id aaa``, says nothing of its session's age)."""
    return sorted(headers, key=lambda header: (header.created_at, header.id))


def decode_header(raw: bytes, *, where: str) -> SessionHeader:
    try:
        header = _header_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise HeaderCorruptError(f"{where}: not a valid session header ({exc})", line=1) from exc
    if header.version > FORMAT_VERSION:
        raise HeaderCorruptError(
            f"{where}: session format version {header.version} is newer than this dsh "
            f"understands ({FORMAT_VERSION})",
            line=1,
        )
    return header


_created_lock = threading.Lock()
_last_created = 0


def _creation_millis() -> int:
    """Now in epoch ms, strictly later than any session this process created before, so two
    sessions made in one millisecond still sort (by id and by ``createdAt``) in creation order."""
    global _last_created
    with _created_lock:
        _last_created = max(now_millis(), _last_created + 1)
        return _last_created


def new_session_id(now_ms: int | None = None) -> str:
    """Ids sort by creation time and are safe on a command line: ``20261130-033232-123-a1b2c3``."""
    ms = now_ms if now_ms is not None else now_millis()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(ms / 1000))
    return f"{stamp}-{ms % 1000:03d}-{secrets.token_hex(3)}"


def now_millis() -> int:
    return time.time_ns() // 1_000_000


class SessionLog(ABC):
    """The stored log of one session: header, events in seq order, and an appender."""

    def __init__(
        self,
        header: SessionHeader,
        events: list[Event],
        *,
        writable: bool,
        resumed: bool,
        warnings: Sequence[str] = (),
    ) -> None:
        self.header = header
        self._events = events
        self.writable = writable
        self.warnings: list[str] = list(warnings)
        self.pending_end_seed = writable and resumed and bool(events)
        """True until the first write of a resumed or forked (seeded) lifecycle, which must be
        session/end-seed (docs/events.md, SessionEndSeed)."""
        self.repaired_from: int | None = None
        """The seq of the first event this open appended to close what a crashed process left
        open (``dsh.store.repair``); None when it appended nothing."""
        self._broken: str | None = None
        self._closed = False

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def events(self) -> Sequence[Event]:
        return self._events

    def append(self, events: Sequence[Event], *, validated: bool = False) -> None:
        """Commit events (seq must continue the log). Nothing is committed if anything fails.
        ``validated``: the caller already ran ``validate_event_shape`` on each (``Session`` does,
        before folding), so it is not run twice."""
        if not self.writable or self._closed:
            raise ReadOnlySessionError(f"session {self.id} is not open for writing")
        if self._broken is not None:
            raise StorageWriteError(f"session {self.id} can no longer be written: {self._broken}")
        if not events:
            return
        expected = len(self._events)
        for offset, event in enumerate(events):
            if event.seq != expected + offset:
                raise EventValidationError(
                    f"event seq {event.seq} appended where seq {expected + offset} is next",
                    seq=event.seq,
                )
            if not validated:
                validate_event_shape(event)
        lines = [encode_event(event) for event in events]
        durable = not _DURABLE_TYPES.isdisjoint(map(type, events))
        self._write_lines(lines, durable=durable)
        self._events.extend(events)
        self.pending_end_seed = False

    def catch_up(self, events: Sequence[Event]) -> None:
        """Take in ``events`` that another process appended to this read-only log's stored
        log after it was read (read on from a position, so checked as a load checks them)."""
        self.check_caught_up(events)
        self._events.extend(events)

    def check_caught_up(self, events: Sequence[Event]) -> None:
        """Refuse what ``catch_up`` must not take in: events that do not continue the log's
        seqs (``LogCorruptError``), or any on a log open for writing, which grows by its own
        appends only (``UsageError``)."""
        if self.writable:
            raise UsageError(f"session {self.id} is open for writing here: only it appends")
        for expected, event in enumerate(events, len(self._events)):
            if event.seq != expected:
                raise LogCorruptError(
                    f"session {self.id}: expected seq {expected} but found seq {event.seq}",
                    seq=event.seq,
                )

    def sync(self) -> None:
        """Block until everything appended so far is on stable storage."""
        if self.writable and not self._closed:
            self._sync()

    def close(self) -> None:
        if self._closed:
            return
        try:
            if self.writable and self._broken is None:
                self._sync()
        finally:
            self._closed = True
            self._close()

    def not_committed(self, count: int) -> str:
        """What a failed write of ``count`` events did not commit, and what the log keeps: the
        events appended before them (a turn's start, its step's start) are committed."""
        first = len(self._events)
        span = f"seq {first}" if count == 1 else f"seq {first}-{first + count - 1}"
        if count == 1:
            return f"this event ({span}) was not committed; the log keeps the {first} before it"
        return (
            f"these {count} events ({span}) were not committed; the log keeps the {first} "
            "before them"
        )

    def _mark_broken(self, reason: str) -> None:
        self._broken = reason

    @abstractmethod
    def _write_lines(self, lines: list[bytes], *, durable: bool) -> None:
        """Persist encoded events atomically or raise StorageWriteError having persisted none."""

    @abstractmethod
    def _sync(self) -> None: ...

    @abstractmethod
    def _close(self) -> None: ...

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EventStore(Protocol):
    """Where session logs live. Backends: JSONL (default), SQLite, memory."""

    def create(
        self,
        *,
        cwd: str,
        parent_session: str | None = None,
        seed: Sequence[Event] = (),
        session_id: str | None = None,
        created_at: int | None = None,
        seed_length: int | None = None,
    ) -> SessionLog:
        """Start a new session, open for writing (``session_id``/``created_at`` default to a
        fresh id and now; an existing id is refused). The header and ``seed`` are written as
        one (all or nothing); a fork's ``seedLength`` is ``len(seed)`` unless ``seed_length``
        says otherwise (a moved fork keeps its own while its whole log is its seed)."""
        ...

    def open(self, session_id: str, *, writable: bool = False) -> SessionLog:
        """Load a session; writable opens take the single-writer lock and repair a crash."""
        ...

    def unreadable(self) -> list[UnreadableSession]:
        """Stored sessions whose header cannot be read (left out of ``list``), with the reason."""
        ...

    def list(self) -> list[SessionHeader]:
        """Headers of every stored session, oldest first (``oldest_first``: by creation time,
        ties by id)."""
        ...

    def header_of(self, session_id: str) -> SessionHeader | UnreadableSession | None:
        """What ``list`` or ``unreadable`` say of the one session ``session_id``, read without
        reading the others; None when there is no such session."""
        ...

    def latest_settings(self, session_id: str) -> SessionSettingsEvent | None:
        """The last ``session/settings`` event of ``session_id``'s stored log, what a load's
        per-type index ends with (None: it has none), found without loading the log: its cost
        does not grow with the events after it (JSONL: a settings record, SQLite: an index).
        Its own line is checked (``LogCorruptError``); a load checks the others.
        ``SessionNotFoundError`` when there is no such session."""
        ...


def resolve_session_id(store_: EventStore, wanted: str) -> str:
    """An exact id, or a unique prefix of one (ids start with their creation time). An exact
    id reads that session's header alone; only a prefix lists the store."""
    if store_.header_of(wanted) is not None:
        return wanted
    ids = [h.id for h in store_.list()] + [u.id for u in store_.unreadable()]
    matches = [i for i in ids if i.startswith(wanted)] if wanted else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
        raise AmbiguousSessionError(
            f"session id {wanted!r} is ambiguous: {len(matches)} sessions match ({shown}); "
            "give more of the id"
        )
    raise SessionNotFoundError(f"no session {wanted!r} (see `dsh sessions list --all`)")
