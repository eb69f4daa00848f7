"""A full disk (ENOSPC, simulated) refuses a reply after its turn's start was written. The
error used to say "nothing was committed" though ``turn/start`` and ``step/start`` were, and the
next open said the turn was "left open by a crashed process" though nothing crashed: the
process released its lock cleanly. Both now say what happened."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from dsh.errors import StorageWriteError
from dsh.events import AssistantMessage, StepStart, TurnStart
from dsh.store import JsonlStore, SqliteStore
from tests.helpers import (
    append_chat_turn,
    assistant_message,
    leave_lock_of_a_killed_writer,
    new_session,
    user_message,
)


class _FullDiskCursor:
    def execute(self, *args: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")


def _refuse_writes(monkeypatch: pytest.MonkeyPatch, log: Any, backend: str) -> None:
    if backend == "jsonl":

        def full(fd: int, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr("dsh.store.jsonl.os.write", full)
    else:
        monkeypatch.setattr(log, "_cursor", _FullDiskCursor())


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_a_reply_refused_by_a_full_disk_says_what_was_committed_and_no_crash_is_claimed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    store = JsonlStore(tmp_path) if backend == "jsonl" else SqliteStore(tmp_path)
    session = new_session(store)
    append_chat_turn(session)
    session.append(TurnStart(turn=2))
    session.append(StepStart(turn=2, step=1))
    session.append(user_message("write a lot"))
    kept = len(session.events)
    with monkeypatch.context() as patch:
        _refuse_writes(patch, session._log, backend)
        with pytest.raises(StorageWriteError) as refused:
            session.append(
                AssistantMessage(turn=2, step=1, message=assistant_message("x" * 100_000))
            )
    message = str(refused.value)
    assert "nothing was committed" not in message
    assert f"this event (seq {kept}) was not committed" in message
    assert f"the log keeps the {kept} before it" in message
    session.close()  # the process ends cleanly: its lock is released

    with store.open(session.id, writable=True) as log:
        closed = [w for w in log.warnings if w.startswith("closed turn left open")]
    assert len(closed) == 1
    assert "crashed" not in closed[0].replace("did not crash", "")
    assert "could not write the rest of its log" in closed[0]


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_a_turn_left_open_by_a_killed_writer_is_still_called_a_crash(
    tmp_path: Path, backend: str
) -> None:
    store = JsonlStore(tmp_path) if backend == "jsonl" else SqliteStore(tmp_path)
    session = new_session(store)
    session.append(TurnStart(turn=1))
    session.close()
    leave_lock_of_a_killed_writer(store, session.id)
    with store.open(session.id, writable=True) as log:
        closed = [w for w in log.warnings if w.startswith("closed turn left open")]
    assert closed == ["closed turn left open by a crashed process (2 repair events)"]
