"""What a fork copies and how it is named (``dsh.agent.fork``): a whole copy of a session whose
turn is still running elsewhere (or was left open) ends with its last finished turn, so it
opens with no repair, and says so; with no finished turn it is refused in one line; a fork
before the running turn is a clean cut. The copy is titled after the parent's latest title,
numbered, never stacked; it records the settings the parent runs with."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from dsh.agent.fork import FORK_MARK, fork_note, fork_session
from dsh.agent.settings_record import latest, snapshot
from dsh.config import Settings
from dsh.errors import UsageError
from dsh.events import (
    SessionTitle,
    StepStart,
    TurnEndEvent,
    TurnStart,
    TurnStartEvent,
)
from dsh.store import EventStore, JsonlStore, open_store
from dsh.surface import Session
from dsh.transcript.titles import session_title
from tests.helpers import append_chat_turn, new_session, user_message

_RUNNING = """
import sys, time
from pathlib import Path
from dsh.events import StepStart, TurnStart
from dsh.store import open_store
from dsh.surface import Session
from tests.helpers import user_message
home, backend, session_id, turn = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with Session.open(open_store(Path(home), backend), session_id, writable=True) as session:
    session.append(TurnStart(turn=turn))
    session.append(StepStart(turn=turn, step=1))
    session.append(user_message(f"prompt {turn}"))
    session.sync()
    print("ready", flush=True)
    time.sleep(120)
"""


def finished_session(store: EventStore, finished: int) -> str:
    with new_session(store) as session:
        for n in range(finished):
            append_chat_turn(session, f"prompt {n + 1}", f"reply {n + 1}")
        return session.id


@contextlib.contextmanager
def turn_running(home: Path, session_id: str, turn: int, backend: str = "jsonl") -> Iterator[None]:
    """Another process holding the session, its turn ``turn`` begun (its prompt logged, no
    reply yet, no ``turn/end``), as a terminal UI running it leaves the log."""
    argv = [sys.executable, "-c", _RUNNING, str(home), backend, session_id, str(turn)]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            child.kill()
            raise AssertionError(f"the child did not begin its turn: {child.communicate()[1]}")
        yield
    finally:
        child.kill()
        child.wait(timeout=30)


def running_session(store: JsonlStore, finished: int = 1) -> str:
    """A session with ``finished`` turns done and the next one begun, by a process that then
    ended (the turn left open, nobody holding the session)."""
    with new_session(store) as session:
        for n in range(finished):
            append_chat_turn(session, f"prompt {n + 1}", f"reply {n + 1}")
        turn = finished + 1
        session.append(TurnStart(turn=turn))
        session.append(StepStart(turn=turn, step=1))
        session.append(user_message(f"prompt {turn}"))
        return session.id


def opened_warnings(store: EventStore, session_id: str) -> list[str]:
    with Session.open(store, session_id, writable=True) as session:
        return list(session.warnings)


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_a_whole_copy_of_a_running_session_ends_with_its_last_finished_turn(
    tmp_path: Path, backend: str
):
    home = tmp_path / "home"
    store = open_store(home, backend)
    parent = finished_session(store, 1)
    with turn_running(home, parent, 2, backend):
        with Session.open(store, parent) as session:
            running_at = session.of_type(TurnStartEvent)[-1].seq
        made = fork_session(store, parent)
        before = fork_session(store, parent, before_turn=2)  # the running turn: a clean cut
    assert made.copied == running_at and (made.unfinished, made.running) == (2, True)
    note = fork_note(made)
    assert f"Forked session {parent} at the end of turn 1 (turn 2 is still running" in note
    assert before.copied == running_at and before.before is not None
    assert before.before.prompt == "prompt 2"
    for copy in (made.session_id, before.session_id):
        assert opened_warnings(store, copy) == []  # nothing to repair: no "disk full?"
        with Session.open(store, copy) as session:
            ends = session.of_type(TurnEndEvent)
            assert [e.data.turn for e in ends] == [1]
            assert len(session.of_type(TurnStartEvent)) == 1


def test_a_turn_left_open_is_left_out_and_said_not_finished(tmp_path: Path):
    store = JsonlStore(tmp_path / "home")
    parent = running_session(store, finished=2)
    made = fork_session(store, parent)  # nobody holds it: a process ended mid-turn
    assert (made.unfinished, made.running) == (3, False)
    assert "at the end of turn 2 (turn 3 did not finish: not copied)" in fork_note(made)
    assert opened_warnings(store, made.session_id) == []


def test_a_first_turn_still_running_leaves_nothing_to_copy(tmp_path: Path):
    home = tmp_path / "home"
    store = JsonlStore(home)
    parent = finished_session(store, 0)
    with turn_running(home, parent, 1), pytest.raises(UsageError) as refused:
        fork_session(store, parent)
    assert str(refused.value) == (
        f"nothing finished to copy yet: turn 1 of session {parent} is still running; "
        "fork it once a turn has ended"
    )
    assert [h.id for h in store.list()] == [parent]  # nothing made


def title_of(store: JsonlStore, session_id: str) -> str | None:
    with Session.open(store, session_id) as session:
        return session_title(session.events)


def test_a_fork_takes_the_parents_latest_title_numbered_not_stacked(tmp_path: Path):
    store = JsonlStore(tmp_path / "home")
    with new_session(store) as session:
        append_chat_turn(session, "first prompt", "one")
        session.append(SessionTitle(title="plan 計画 🎉"))
        append_chat_turn(session, "second prompt", "two")
        parent = session.id
    rewound = fork_session(store, parent, before_turn=1)  # copies neither prompt nor title
    assert title_of(store, rewound.session_id) == "plan 計画 🎉" + FORK_MARK
    again = fork_session(store, rewound.session_id)
    assert title_of(store, again.session_id) == "plan 計画 🎉 (fork 2)"
    third = fork_session(store, again.session_id)
    assert title_of(store, third.session_id) == "plan 計画 🎉 (fork 3)"
    other = fork_session(store, parent)
    assert title_of(store, other.session_id) == "plan 計画 🎉 (fork 4)"


def test_the_copy_records_the_settings_the_parent_runs_with(tmp_path: Path):
    store = JsonlStore(tmp_path / "home")
    first = snapshot(Settings(), "openai-compatible", "fake-1", 32_000, "/work/project")
    later = msgspec.structs.replace(first, model="fake-2", changed=("provider.model",))
    with new_session(store) as session:
        session.append(first)
        append_chat_turn(session, "one", "done one")
        session.append(later)
        append_chat_turn(session, "two", "done two")
        parent = session.id
    rewound = fork_session(store, parent, before_turn=2)  # the cut keeps only fake-1's record
    with Session.open(store, rewound.session_id) as session:
        recorded = latest(session)
    assert recorded is not None and recorded.model == "fake-2"
    chosen = msgspec.structs.replace(first, model="fake-3", context_window=8_000)
    face = fork_session(store, parent, settings=chosen)  # a face's /model choice, unlogged
    with Session.open(store, face.session_id) as session:
        recorded = latest(session)
    assert recorded is not None and (recorded.model, recorded.context_window) == ("fake-3", 8_000)


def test_the_note_counts_one_event_in_the_singular(tmp_path: Path):
    store = JsonlStore(tmp_path / "home")
    with new_session(store) as session:
        session.append(SessionTitle(title="named"))
        append_chat_turn(session, "one", "done one")
        parent = session.id
    made = fork_session(store, parent, before_turn=1)
    assert made.copied == 1 and "(1 event copied;" in fork_note(made)


def test_a_turn_this_process_runs_is_said_running(tmp_path: Path):
    """A face forking the session it has open while its turn runs (the web's other pages, a
    command typed meanwhile): the turn is running, not left unfinished."""
    store = JsonlStore(tmp_path / "home")
    with new_session(store) as session:
        append_chat_turn(session, "prompt 1", "reply 1")
        session.append(TurnStart(turn=2))
        session.append(user_message("prompt 2"))
        session.sync()
        made = fork_session(store, session.id)
    assert (made.unfinished, made.running) == (2, True)
    assert "(turn 2 is still running: not copied)" in fork_note(made)
