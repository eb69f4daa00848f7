"""``dsh sessions migrate --to sqlite|jsonl``: move every session from one store to the other.

Each session is copied under both stores' write locks (no writer runs meanwhile): the header
keeps its id, workspace, parent and creation time, the events are written unchanged with the
header in one write or transaction (a kill meanwhile leaves no partial copy behind), and the
copy is read back and compared with the original — the header and every event's canonical bytes
must be identical. Only then is the original removed; a session that fails the check stays where
it was (its partial copy is removed instead). A session already present in the target is left
alone in both stores and reported.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from dsh.errors import DshError, StoreError
from dsh.events import Event, encode_event
from dsh.store.base import SessionHeader, SessionLog, encode_header
from dsh.store.jsonl import LOCK_NAME, LOG_NAME, JsonlStore
from dsh.store.locking import WriteLock, acquire_write_lock
from dsh.store.sqlite import SqliteStore

Store = JsonlStore | SqliteStore


@dataclass
class MigrationReport:
    moved: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Already in the target store: left in both."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(id, why): left in the source store, untouched."""

    def lines(self, source: str, target: str) -> list[str]:
        out = [f"moved {len(self.moved)} session(s) from {source} to {target}"]
        out += [f"  {sid}: already in {target}; left in both" for sid in self.skipped]
        out += [f"  {sid}: not moved: {why}" for sid, why in self.failed]
        return out


def store_location(store: Store) -> str:
    return str(store.root if isinstance(store, JsonlStore) else store.path)


def migrate_sessions(source: Store, target: Store) -> MigrationReport:
    """Move every readable session of ``source`` into ``target`` (see the module doc)."""
    report = MigrationReport()
    present = {header.id for header in target.list()} | {u.id for u in target.unreadable()}
    for header in source.list():
        if header.id in present:
            report.skipped.append(header.id)
            continue
        try:
            _move(source, target, header.id)
        except DshError as exc:
            report.failed.append((header.id, " ".join(str(exc).split())))
        else:
            report.moved.append(header.id)
    return report


def _move(source: Store, target: Store, session_id: str) -> None:
    lock = _source_lock(source, session_id)
    try:
        log = source.open(session_id)  # read-only: nothing (not even a crash repair) is appended
        header, events, warnings = log.header, list(log.events), list(log.warnings)
        log.close()
        if warnings:  # e.g. a torn tail: moving would drop bytes that only the original holds
            raise StoreError(f"it loads with a warning ({warnings[0]}); resume or repair it first")
        try:
            _copy(target, header, events)
            _verify(target, header, events)
        except BaseException:
            with contextlib.suppress(DshError, OSError):
                remove_session(target, session_id)
            raise
        remove_session(
            source, session_id
        )  # a JSONL directory keeps any other files (repair copies)
    finally:
        lock.release()


def _copy(target: Store, header: SessionHeader, events: Sequence[Event]) -> None:
    """The copy is created with every event as its seed: one write (JSONL) or transaction
    (SQLite) holds the header and the events, so a migrate killed meanwhile leaves no copy for
    the next one to take for the session (a header and part of the events did)."""
    copy: SessionLog = target.create(
        cwd=header.cwd,
        parent_session=header.parent_session,
        seed=events,
        session_id=header.id,
        created_at=header.created_at,
        seed_length=header.seed_length,
    )
    try:
        copy.sync()
    finally:
        copy.close()


def _verify(target: Store, header: SessionHeader, events: Sequence[Event]) -> None:
    with target.open(header.id) as copy:
        if encode_header(copy.header) != encode_header(header):
            raise StoreError(f"session {header.id}: the copied header differs from the original")
        if len(copy.events) != len(events):
            raise StoreError(
                f"session {header.id}: the copy holds {len(copy.events)} events, not {len(events)}"
            )
        for original, copied in zip(events, copy.events, strict=True):
            if encode_event(copied) != encode_event(original):
                raise StoreError(f"session {header.id}: event seq {original.seq} differs")


def _source_lock(source: Store, session_id: str) -> WriteLock:
    if isinstance(source, JsonlStore):
        return acquire_write_lock(source.session_dir(session_id) / LOCK_NAME, session_id)
    source.lock_dir.mkdir(parents=True, exist_ok=True)
    return acquire_write_lock(source.lock_dir / f"{session_id}.lock", session_id)


def remove_session(store: Store, session_id: str) -> None:
    """Delete a stored session from either store (its log and lock; other files stay)."""
    if isinstance(store, JsonlStore):
        directory = store.session_dir(session_id)
        try:
            (directory / LOG_NAME).unlink(missing_ok=True)
            (directory / LOCK_NAME).unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # other files stay, and so does the directory
                directory.rmdir()
            fd = os.open(store.root, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StoreError(f"cannot remove {directory / LOG_NAME}: {exc.strerror}") from exc
        return
    store.remove_session(session_id)


def remove_kept_session(store: object, session_id: str) -> bool:
    """``remove_session`` for a store that keeps sessions (a JSONL or SQLite one); False for
    one that keeps none (in memory), which is left as it is."""
    if not isinstance(store, JsonlStore | SqliteStore):
        return False
    remove_session(store, session_id)
    return True
