"""The durability contract, the same for the JSONL and the SQLite store (docs/architecture.md):

* on return from an append its events are handed to the OS, so a ``kill -9`` right after it
  loses none of them;
* ``step/end``, ``turn/end`` and ``compaction/end`` request a background fsync, other events ride
  on the next one;
* on return from ``sync()`` or ``close()`` everything appended is on stable storage: they fsync
  events that no request covered yet.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dsh.events import StepEnd, StepStart, TurnStart
from dsh.store import DURABLE_EVENT_CLASSES, EventStore, JsonlStore, SqliteStore, open_store
from dsh.surface import Session
from tests.helpers import append_chat_turn, compaction_bracket, new_session, user_message

STORES = ["jsonl", "sqlite"]

_APPEND_THEN_KILL = """
import os, signal, sys
from pathlib import Path
from dsh.events import TextBlock, Message, UserSource, TurnStart
from dsh.store import open_store
from dsh.surface import Session
session = Session(open_store(Path(sys.argv[1]), sys.argv[2]).open(sys.argv[3], writable=True))
session.append(TurnStart(turn=2))
for n in range(3):
    text = (TextBlock(text=f"after the last fsync {n}"),)
    session.append(Message(id=f"u{n}", role="user", content=text, source=UserSource()))
print(len(session.events), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _store(kind: str, home: Path) -> EventStore:
    return JsonlStore(home) if kind == "jsonl" else SqliteStore(home)


@pytest.fixture
def synced(monkeypatch) -> list[int]:
    """One entry per fsync the group-commit threads run through ``os.fsync``."""
    calls: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if threading.current_thread().name.startswith("fsync-"):
            calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def _settle(session: Session) -> None:
    """Wait for every fsync requested so far (and request none)."""
    session._log._fsync.wait()  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", STORES)
def test_events_appended_are_kept_by_a_kill_9_right_after_the_append_returns(
    kind: str, tmp_path: Path
):
    store = _store(kind, tmp_path)
    with new_session(store) as session:
        append_chat_turn(session)
    child = subprocess.run(
        [sys.executable, "-c", _APPEND_THEN_KILL, str(tmp_path), kind, session.id],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -9, child.stderr
    appended = int(child.stdout)
    reopened = Session.open(open_store(tmp_path, kind), session.id)
    assert len(reopened.events) == appended  # none of the non-durable appends is lost


@pytest.mark.parametrize("kind", STORES)
def test_only_the_events_that_close_a_step_a_turn_or_a_pass_request_an_fsync(
    kind: str, tmp_path: Path, synced: list[int]
):
    session = new_session(_store(kind, tmp_path))
    durable_types = set(DURABLE_EVENT_CLASSES)
    session.append(TurnStart(turn=1))
    session.append(StepStart(turn=1, step=1))
    user = session.append(user_message("hi")).seq
    _settle(session)
    assert synced == []
    assert not any(type(e) in durable_types for e in session.events)
    session.append(StepEnd(turn=1, step=1))  # closes a step
    _settle(session)
    assert len(synced) == 1
    seqs = compaction_bracket(session, [user], "the user said hi")  # ends with compaction/end
    _settle(session)
    assert len(synced) == 2
    assert [type(session.events[s]) in durable_types for s in seqs] == [False] * 3 + [True]
    session.close()


@pytest.mark.parametrize("kind", STORES)
def test_sync_puts_events_after_the_last_durable_one_on_stable_storage(
    kind: str, tmp_path: Path, synced: list[int]
):
    session = new_session(_store(kind, tmp_path))
    append_chat_turn(session)
    session.sync()
    before = len(synced)
    session.append(TurnStart(turn=2))
    session.append(user_message("not durable on its own"))
    session.sync()
    assert len(synced) == before + 1
    session.sync()  # nothing appended since: no fsync
    assert len(synced) == before + 1
    session.close()
    assert len(synced) == before + 1


@pytest.mark.parametrize("kind", STORES)
def test_close_puts_everything_appended_on_stable_storage(
    kind: str, tmp_path: Path, synced: list[int]
):
    session = new_session(_store(kind, tmp_path))
    session.append(TurnStart(turn=1))
    session.append(user_message("closed before any step ended"))
    _settle(session)
    assert synced == []
    session.close()
    assert len(synced) == 1
