"""In-memory store for tests and throwaway sessions.

It keeps encoded bytes, not objects, so every ``open`` decodes like a real store and the shared
contract suite exercises the same codec paths.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from dsh.errors import SessionLockedError, SessionNotFoundError, StoreError
from dsh.events import (
    Event,
    SessionSettingsEvent,
    check_contiguous,
    decode_event_line,
    decode_events,
    encode_event,
)
from dsh.events.types import event_type_name
from dsh.store.base import (
    SessionHeader,
    SessionLog,
    UnreadableSession,
    new_header,
    now_millis,
    oldest_first,
)
from dsh.store.repair import repair_at_open

_SETTINGS_START = b'{"type":"' + event_type_name(SessionSettingsEvent).encode() + b'",'


class MemorySessionLog(SessionLog):
    def __init__(
        self,
        store: MemoryStore,
        header: SessionHeader,
        events: list[Event],
        *,
        writable: bool,
        resumed: bool,
    ) -> None:
        super().__init__(header, events, writable=writable, resumed=resumed)
        self._store = store

    def _write_lines(self, lines: list[bytes], *, durable: bool) -> None:
        self._store.lines[self.id].extend(lines)

    def _sync(self) -> None:
        pass

    def _close(self) -> None:
        if self.writable:
            self._store.writers.discard(self.id)


class MemoryStore:
    """Sessions held in this process only."""

    def __init__(self) -> None:
        self.headers: dict[str, SessionHeader] = {}
        self.lines: dict[str, list[bytes]] = {}
        self.writers: set[str] = set()

    def create(
        self,
        *,
        cwd: str,
        parent_session: str | None = None,
        seed: Sequence[Event] = (),
        session_id: str | None = None,
        created_at: int | None = None,
        seed_length: int | None = None,
    ) -> MemorySessionLog:
        header = new_header(
            cwd=cwd,
            parent_session=parent_session,
            seed_length=len(seed) if seed_length is None else seed_length,
            session_id=session_id,
            created_at=created_at,
        )
        check_contiguous(seed)
        if header.id in self.headers:
            raise StoreError(f"session {header.id} already exists")
        self.headers[header.id] = header
        self.lines[header.id] = [encode_event(e) for e in seed]
        self.writers.add(header.id)
        return MemorySessionLog(self, header, list(seed), writable=True, resumed=bool(seed))

    def open(self, session_id: str, *, writable: bool = False) -> MemorySessionLog:
        if session_id not in self.headers:
            raise SessionNotFoundError(f"no session {session_id!r} in memory")
        if writable and session_id in self.writers:
            raise SessionLockedError(
                f"session {session_id} is already open for writing by process {os.getpid()}",
                holder_pid=os.getpid(),
            )
        events = decode_events(self.lines[session_id], first_line=0)
        if writable:
            self.writers.add(session_id)
        log = MemorySessionLog(
            self, self.headers[session_id], events, writable=writable, resumed=True
        )
        if writable:
            repair_at_open(log, now_ms=now_millis())
        return log

    def latest_settings(self, session_id: str) -> SessionSettingsEvent | None:
        """The session's last ``session/settings`` event (its lines searched from the end)."""
        if session_id not in self.headers:
            raise SessionNotFoundError(f"no session {session_id!r} in memory")
        lines = self.lines[session_id]
        for seq in range(len(lines) - 1, -1, -1):
            if lines[seq].startswith(_SETTINGS_START):
                event = decode_event_line(lines[seq], line=seq)
                return event if isinstance(event, SessionSettingsEvent) else None
        return None

    def unreadable(self) -> list[UnreadableSession]:
        return []  # headers are kept as objects; nothing to decode

    def list(self) -> list[SessionHeader]:
        return oldest_first(self.headers.values())

    def header_of(self, session_id: str) -> SessionHeader | UnreadableSession | None:
        return self.headers.get(session_id)
