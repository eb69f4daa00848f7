"""``dsh sessions migrate --to sqlite|jsonl``: move every session from one store to the other.

Each session is copied under both stores' write locks (no writer runs meanwhile): the source's
is taken first, the target's comes with the copy (``create`` takes it as it writes the new log,
and the copy is kept open, holding it, until the original is removed). The header keeps its id,
workspace, parent and creation time, the events are written unchanged with the header in one
write or transaction (a kill meanwhile leaves no partial copy behind), and the copy is read back
and compared with the original — the header and every event's canonical bytes must be
identical. Only then is the original removed; a session that fails the check stays where it was
(its partial copy is removed instead).

A session found in both stores (a migrate killed after its copy was written and before the
original was removed) is compared under both locks: a target copy identical to the source
finishes the move (the source copy is removed, as the move would have); a target copy that is
a prefix of the source (a partial copy) is replaced by a whole one and the move completed;
anything else (either was written to after the move stopped, or they are different sessions of
the same id) is refused, saying which copy is newer and how to remove the older by hand. A
session the target holds unreadable is left alone in both stores and reported.
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
    """Unreadable in the target store: left in both."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(id, why): left in the source store, untouched."""
    finished: list[tuple[str, str]] = field(default_factory=list)
    """(id, how): in both stores (a migrate stopped midway), now moved; also in ``moved``."""

    def lines(self, source: str, target: str) -> list[str]:
        out = [f"moved {len(self.moved)} session(s) from {source} to {target}"]
        out += [f"  {sid}: {how}" for sid, how in self.finished]
        out += [
            f"  {sid}: already in {target}, unreadable there; left in both" for sid in self.skipped
        ]
        out += [f"  {sid}: not moved: {why}" for sid, why in self.failed]
        return out


def store_location(store: Store) -> str:
    return str(store.root if isinstance(store, JsonlStore) else store.path)


def migrate_sessions(source: Store, target: Store) -> MigrationReport:
    """Move every readable session of ``source`` into ``target`` (see the module doc)."""
    report = MigrationReport()
    present = {header.id for header in target.list()}
    unreadable = {u.id for u in target.unreadable()}
    for header in source.list():
        if header.id in unreadable:
            report.skipped.append(header.id)
            continue
        try:
            lock = _lock(source, header.id)
            try:
                if header.id in present:
                    how = settle(source, target, header.id)
                    report.finished.append((header.id, how))
                else:
                    _move(source, target, header.id)
            finally:
                lock.release()
        except DshError as exc:
            report.failed.append((header.id, " ".join(str(exc).split())))
        else:
            report.moved.append(header.id)
    return report


def _read(store: Store, session_id: str) -> tuple[SessionHeader, list[Event], list[str]]:
    log = store.open(session_id)  # read-only: nothing (not even a crash repair) is appended
    try:
        return log.header, list(log.events), list(log.warnings)
    finally:
        log.close()


def _move(source: Store, target: Store, session_id: str) -> None:
    """Copy the session (the source's lock held by the caller), check it, remove the original."""
    header, events, warnings = _read(source, session_id)
    if warnings:  # e.g. a torn tail: moving would drop bytes that only the original holds
        raise StoreError(f"it loads with a warning ({warnings[0]}); resume or repair it first")
    copy = _copy(target, header, events)  # open: it holds the target's lock until closed
    try:
        try:
            _verify(target, header, events)
        except BaseException:
            copy.close()
            with contextlib.suppress(DshError, OSError):
                remove_session(target, session_id)
            raise
        remove_session(source, session_id)  # a JSONL directory keeps its other files
    finally:
        copy.close()


def _copy(target: Store, header: SessionHeader, events: Sequence[Event]) -> SessionLog:
    """The copy is created with every event as its seed: one write (JSONL) or transaction
    (SQLite) holds the header and the events, so a migrate killed meanwhile leaves no partial
    copy. Returned open for writing (synced): it holds the target's lock."""
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
    except BaseException:
        copy.close()
        raise
    return copy


def settle(source: Store, target: Store, session_id: str) -> str:
    """A session in both stores (the source's lock held by the caller): finish its move, or
    raise ``StoreError`` saying why not (see the module doc); what was done, in words."""
    lock = _lock(target, session_id)
    try:
        header, events, warnings = _read(source, session_id)
        if warnings:
            raise StoreError(
                f"it is in both stores and the source copy loads with a warning ({warnings[0]}); "
                "resume or repair it first"
            )
        copied, copied_events, copy_warnings = _read(target, session_id)
        ours = [encode_event(e) for e in events]
        theirs = [encode_event(e) for e in copied_events]
        same_header = encode_header(copied) == encode_header(header)
        if same_header and theirs == ours and not copy_warnings:
            remove_session(source, session_id)
            return (
                f"was in both stores, the copy identical (a migrate stopped before removing "
                f"the original): removed the original ({len(ours)} events)"
            )
        partial = same_header and len(theirs) <= len(ours) and theirs == ours[: len(theirs)]
        if not same_header:
            raise StoreError(
                f"it is in both stores with different headers (two sessions of one id); "
                f"keep the one you want and remove the other by hand: in "
                f"{store_location(target)}: {_removal(target, session_id)}; in "
                f"{store_location(source)}: {_removal(source, session_id)}"
            )
        if not partial:
            raise StoreError(
                _differ(source, target, session_id, (events, ours), (copied_events, theirs))
            )
        remove_session(target, session_id)
    finally:
        lock.release()
    _move(source, target, session_id)
    return (
        f"was in both stores, the copy partial ({len(theirs)} of {len(ours)} events): "
        "replaced it with a whole copy and removed the original"
    )


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


def _differ(
    source: Store,
    target: Store,
    session_id: str,
    original: tuple[Sequence[Event], list[bytes]],
    copy: tuple[Sequence[Event], list[bytes]],
) -> str:
    """The refusal for a session whose two copies differ beyond a prefix: which is newer, and
    how to remove the older by hand."""
    (events, ours), (copied, theirs) = original, copy
    agree = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), None)
    agree = min(len(ours), len(theirs)) if agree is None else agree
    where, there = store_location(source), store_location(target)
    same = f"the same up to seq {agree - 1}" if agree else "different from seq 0"
    if agree == len(ours):
        newer, older, store = there, where, source
        why = f"it holds every event of the other and {len(theirs) - len(ours)} more"
    else:
        last = max(e.time for e in events[agree:]) if agree < len(events) else 0
        last_copy = max(e.time for e in copied[agree:]) if agree < len(copied) else 0
        newer, older, store = (there, where, source) if last_copy > last else (where, there, target)
        why = "both were written to after the move stopped; it was written last"
    return (
        f"it is in both stores and the copies differ ({len(ours)} events in {where}, "
        f"{len(theirs)} in {there}, {same}): the copy in {newer} is "
        f"newer ({why}); keep working on it there and remove the older copy in {older} by "
        f"hand ({_removal(store, session_id)}), or export it first to keep it"
    )


def _removal(store: Store, session_id: str) -> str:
    """How to remove a session's copy from ``store`` by hand, in words."""
    if isinstance(store, JsonlStore):
        return f"move {store.session_dir(session_id)} out of {store.root}"
    return (
        f"sqlite3 {store.path} \"DELETE FROM events WHERE session_id='{session_id}'; "
        f"DELETE FROM sessions WHERE id='{session_id}'\""
    )


def _lock(store: Store, session_id: str) -> WriteLock:
    if isinstance(store, JsonlStore):
        return acquire_write_lock(store.session_dir(session_id) / LOCK_NAME, session_id)
    return store.write_lock(session_id)


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
