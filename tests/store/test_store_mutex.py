"""``store_mutex`` (``dsh.store.locking``): one holder at a time among every process and thread
using a store, on ``<home>/locks/_<name>.lock``; its holder's pid in the file while held, the
file emptied on release; the kernel drops it with a killed holder; a holder past the wait is
named in one line, ``MutexUnavailable``. And what a fork does when the numbering lock stays
held (``dsh.agent.fork``): it is made, numbered without waiting, and a warning says so."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.agent.fork import NUMBERING_LOCK, fork_session
from dsh.store import JsonlStore, MemoryStore, SqliteStore, locking
from dsh.store.locking import MutexUnavailable, store_mutex
from dsh.surface import Session
from dsh.transcript.titles import session_title
from tests.helpers import append_chat_turn, new_session

_HOLDING = """
import sys, time
from pathlib import Path
from dsh.store import JsonlStore
from dsh.store.locking import store_mutex
with store_mutex(JsonlStore(Path(sys.argv[1])), "numbers"):
    print("held", flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("make", [JsonlStore, SqliteStore], ids=["jsonl", "sqlite"])
def test_a_second_taker_is_refused_past_its_wait_naming_the_holder(
    tmp_path: Path, make: type
) -> None:
    store = make(tmp_path / "home")
    path = tmp_path / "home" / "locks" / "_numbers.lock"
    with store_mutex(store, "numbers"):
        assert path.read_text().split("\n")[0] == str(os.getpid())
        with pytest.raises(MutexUnavailable) as refused, store_mutex(store, "numbers", wait_s=0):
            pass
        assert str(refused.value).startswith(f"process {os.getpid()} (")
        assert str(refused.value).endswith(f"has held {path} for over 0 s")
        assert "\n" not in str(refused.value)
    assert path.read_text() == ""  # released: no holder named
    with store_mutex(store, "numbers", wait_s=0):  # free again at once
        pass


def test_a_killed_holder_leaves_the_lock_free(tmp_path: Path) -> None:
    home = tmp_path / "home"
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDING, str(home)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        taking = store_mutex(JsonlStore(home), "numbers", wait_s=0)
        with pytest.raises(MutexUnavailable, match=f"process {child.pid} "), taking:
            pass
    finally:
        child.kill()
        child.wait()
    with store_mutex(JsonlStore(home), "numbers", wait_s=0):  # the kernel dropped it
        pass


def test_a_store_without_a_home_has_a_lock_of_this_process() -> None:
    store = MemoryStore()
    second = store_mutex(store, "numbers", wait_s=0)
    with store_mutex(store, "numbers"), pytest.raises(MutexUnavailable), second:
        pass
    with store_mutex(store, "numbers", wait_s=0):
        pass


def test_a_fork_is_made_while_the_numbering_lock_stays_held(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder stuck past the wait (stopped, on a hung disk) costs the fork its lock, not the
    copy: it is numbered without waiting, and a warning says so."""
    store = JsonlStore(tmp_path / "home")
    with new_session(store) as session:
        append_chat_turn(session, "plan", "ok")
        parent = session.id
    monkeypatch.setattr(locking, "MUTEX_WAIT_S", 0.0)
    with store_mutex(store, NUMBERING_LOCK), caplog.at_level(logging.WARNING):
        made = fork_session(store, parent)
    with Session.open(store, made.session_id) as fork:
        assert session_title(fork.events) == "plan (fork)"
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith(f"forks are numbered one at a time, but process {os.getpid()} (")
    assert warning.endswith(
        f"{made.session_id} was numbered without waiting (another fork may have its number)"
    )


def test_a_session_named_as_the_lock_does_not_hold_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dsh sessions import --id fork-numbering`` into SQLite: its writer lock is
    ``locks/fork-numbering.lock``; open for writing, it does not keep forks from being
    numbered (nor would a fork keep it from being opened)."""
    store = SqliteStore(tmp_path / "home")
    with new_session(store) as session:
        append_chat_turn(session, "plan", "ok")
        parent = session.id
    monkeypatch.setattr(locking, "MUTEX_WAIT_S", 0.0)
    named = Session(store.create(cwd=str(tmp_path), session_id=NUMBERING_LOCK))
    with named, caplog.at_level(logging.WARNING):
        made = fork_session(store, parent)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    with Session.open(store, made.session_id) as fork:
        assert session_title(fork.events) == "plan (fork)"
