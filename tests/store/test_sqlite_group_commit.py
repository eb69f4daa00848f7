"""SQLite group commit: appends commit with synchronous=NORMAL; step/end, turn/end and
compaction/end request a background fsync of the WAL; sync() and close() wait until everything
committed is synced; a failed fsync refuses later writes with one line."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from dsh.errors import StorageWriteError
from dsh.events import StepEnd, TurnStart
from dsh.store import SqliteStore
from dsh.surface import Session
from tests.helpers import append_chat_turn, new_session, user_message


@pytest.fixture
def synced(monkeypatch) -> list[str]:
    """Paths fsynced by the store, recorded from the fsync thread."""
    paths: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if threading.current_thread().name.startswith("fsync-"):
            paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return paths


def test_durable_events_fsync_the_wal_in_the_background(tmp_path: Path, synced: list[str]):
    store = SqliteStore(tmp_path)
    session = new_session(store)
    session.append(TurnStart(turn=1))
    session.append(user_message("hi"))
    assert synced == []  # nothing durable yet: no fsync requested
    append_chat_turn(session)  # ends with step/end and turn/end
    session.sync()
    assert synced and all(p == str(store.path) + "-wal" for p in synced)
    session.close()


def test_sync_makes_non_durable_appends_durable_too(tmp_path: Path, synced: list[str]):
    session = new_session(SqliteStore(tmp_path))
    session.append(user_message("hi"))
    session.sync()
    assert len(synced) == 1
    session.sync()  # nothing new committed: no second fsync
    assert len(synced) == 1
    session.close()


def test_a_failed_fsync_refuses_later_writes_and_keeps_the_log(tmp_path: Path, monkeypatch):
    store = SqliteStore(tmp_path)
    session = new_session(store)
    session.append(TurnStart(turn=1))

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    session.append(StepEnd(turn=1, step=1))
    with pytest.raises(StorageWriteError) as caught:
        session.sync()
    assert "\n" not in str(caught.value)
    with pytest.raises(StorageWriteError):
        session.append(user_message("after"))
    monkeypatch.undo()
    session.close()
    assert len(Session.open(store, session.id).events) == 2  # both committed events are there
