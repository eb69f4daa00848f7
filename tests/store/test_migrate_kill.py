"""``dsh sessions migrate`` killed (SIGKILL) while it writes a session's copy: the next migrate
completes the move. The copy used to be written in two steps (its header, then its events), and
a JSONL copy straight into its final name, so a kill in between left a copy with fewer events,
or a torn one, in the target store; every later migrate then reported the session as "already in
the target; left in both" and a resume from the target store continued the truncated copy."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.errors import SessionLockedError
from dsh.events import encode_event
from dsh.store import JsonlStore, SqliteStore, migrate
from dsh.store.locking import acquire_write_lock
from dsh.store.migrate import Store, migrate_sessions, remove_session, store_location
from dsh.surface import Session
from tests.helpers import append_chat_turn, append_tool_turn, new_session, user_message

_KILLED_MIGRATE = """
import os, signal, sys
from pathlib import Path
from dsh.store import JsonlStore, SqliteStore, base
from dsh.store.migrate import migrate_sessions

home, target = Path(sys.argv[1]), sys.argv[2]
jsonl, sqlite = JsonlStore(home), SqliteStore(home)
real_write = os.write


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def append_then_die(self, events, **kwargs):  # a copy's events written after its header
    die()


def half_then_die(fd, data):  # the copy's JSONL file: killed halfway through its write
    if bytes(data[:18]) == b'{"type":"session",':
        real_write(fd, bytes(data[: len(data) // 2]))
        die()
    return real_write(fd, data)


base.SessionLog.append = append_then_die
os.write = half_then_die
if target == "sqlite":
    migrate_sessions(jsonl, sqlite)
else:
    migrate_sessions(sqlite, jsonl)
print("finished", flush=True)
"""


@pytest.mark.parametrize("target", ["sqlite", "jsonl"])
def test_a_migrate_killed_while_it_writes_a_copy_is_completed_by_the_next(
    tmp_path: Path, target: str
) -> None:
    jsonl, sqlite = JsonlStore(tmp_path), SqliteStore(tmp_path)
    source, goal = (jsonl, sqlite) if target == "sqlite" else (sqlite, jsonl)
    with new_session(source) as session:
        append_chat_turn(session)
        append_tool_turn(session)
    with source.open(session.id) as log:
        events = [encode_event(e) for e in log.events]
    subprocess.run(
        [sys.executable, "-c", _KILLED_MIGRATE, str(tmp_path), target],
        capture_output=True,
        timeout=60,
        check=False,
    )
    report = migrate_sessions(source, goal)
    assert not report.failed and not report.skipped
    assert source.list() == []
    with goal.open(session.id) as copy:
        assert [encode_event(e) for e in copy.events] == events
        assert copy.warnings == []


_KILLED_BEFORE_REMOVAL = """
import os, signal, sys
from pathlib import Path
from dsh.store import JsonlStore, SqliteStore, migrate

home, target = Path(sys.argv[1]), sys.argv[2]
jsonl, sqlite = JsonlStore(home), SqliteStore(home)
source = jsonl if target == "sqlite" else sqlite


def remove_then_die(store, session_id):  # the copy is verified; the original is not removed
    if store is source:
        os.kill(os.getpid(), signal.SIGKILL)


migrate.remove_session = remove_then_die
if target == "sqlite":
    migrate.migrate_sessions(jsonl, sqlite)
else:
    migrate.migrate_sessions(sqlite, jsonl)
print("finished", flush=True)
"""


def _killed_before_removal(tmp_path: Path, target: str) -> tuple[Store, Store, str, list[bytes]]:
    """A session that a migrate killed (SIGKILL) after its copy was verified, before its
    original was removed, left in both stores: the stores, its id and its events' bytes."""
    jsonl, sqlite = JsonlStore(tmp_path), SqliteStore(tmp_path)
    source, goal = (jsonl, sqlite) if target == "sqlite" else (sqlite, jsonl)
    with new_session(source) as session:
        append_chat_turn(session)
        append_tool_turn(session)
    with source.open(session.id) as log:
        events = [encode_event(e) for e in log.events]
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_BEFORE_REMOVAL, str(tmp_path), target],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert [h.id for h in source.list()] == [h.id for h in goal.list()] == [session.id]
    return source, goal, session.id, events


def _events(store: Store, session_id: str) -> list[bytes]:
    with store.open(session_id) as log:
        return [encode_event(e) for e in log.events]


@pytest.mark.parametrize("target", ["sqlite", "jsonl"])
def test_a_migrate_killed_before_it_removed_the_original_is_finished_by_the_next(
    tmp_path: Path, target: str
) -> None:
    source, goal, session_id, events = _killed_before_removal(tmp_path, target)
    report = migrate_sessions(source, goal)
    assert not report.failed and not report.skipped and report.moved == [session_id]
    assert [sid for sid, _ in report.finished] == [session_id]
    assert "removed the original" in report.finished[0][1]
    assert source.list() == [] and _events(goal, session_id) == events
    again = migrate_sessions(source, goal)  # nothing left to do
    assert again.lines("a", "b") == ["moved 0 session(s) from a to b"]


@pytest.mark.parametrize("target", ["sqlite", "jsonl"])
def test_a_partial_copy_in_the_target_is_replaced_and_the_move_completed(
    tmp_path: Path, target: str
) -> None:
    """A copy that is a prefix of the original (left by an older migrate, or the original was
    written to after the kill) is replaced by a whole one."""
    source, goal, session_id, events = _killed_before_removal(tmp_path, target)
    with source.open(session_id) as log:
        header, kept = log.header, list(log.events)
    remove_session(goal, session_id)
    goal.create(
        cwd=header.cwd,
        seed=kept[:3],
        session_id=session_id,
        created_at=header.created_at,
        seed_length=header.seed_length,
    ).close()
    report = migrate_sessions(source, goal)
    assert not report.failed and report.moved == [session_id]
    assert f"the copy partial (3 of {len(events)} events)" in report.finished[0][1]
    assert source.list() == [] and _events(goal, session_id) == events


@pytest.mark.parametrize("target", ["sqlite", "jsonl"])
@pytest.mark.parametrize("written", ["target", "both"])
def test_copies_written_to_after_the_kill_are_refused_naming_the_newer(
    tmp_path: Path, target: str, written: str
) -> None:
    source, goal, session_id, _ = _killed_before_removal(tmp_path, target)
    with Session(goal.open(session_id, writable=True), clock=lambda: 2 * 10**12) as later:
        later.append(user_message("later"))
        later.append(user_message("and more"))
    if written == "both":
        with Session(source.open(session_id, writable=True), clock=lambda: 10**12) as earlier:
            earlier.append(user_message("earlier"))
    before = (_events(source, session_id), _events(goal, session_id))
    report = migrate_sessions(source, goal)
    assert report.moved == [] and [sid for sid, _ in report.failed] == [session_id]
    why = report.failed[0][1]
    newer, older = store_location(goal), store_location(source)
    assert f"the copy in {newer} is newer" in why
    assert f"remove the older copy in {older} by hand" in why
    if written == "target":
        assert "it holds every event of the other and " in why, why
    else:
        assert "it was written last" in why
    assert (_events(source, session_id), _events(goal, session_id)) == before
    line = report.lines(older, newer)[-1]
    assert "\n" not in line and line.startswith(f"  {session_id}: not moved: it is in both")


@pytest.mark.parametrize("target", ["sqlite", "jsonl"])
def test_the_copy_holds_the_target_stores_lock_until_the_original_is_removed(
    tmp_path: Path, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    jsonl, sqlite = JsonlStore(tmp_path), SqliteStore(tmp_path)
    source, goal = (jsonl, sqlite) if target == "sqlite" else (sqlite, jsonl)
    with new_session(source) as session:
        append_chat_turn(session)
    refused: list[str] = []
    real_remove = migrate.remove_session

    def remove(store: Store, session_id: str) -> None:
        if store is source:  # a writer of the copy now would write a session still in both
            try:
                acquire_write_lock(goal.lock_path(session_id), session_id).release()
            except SessionLockedError as exc:
                refused.append(str(exc))
        real_remove(store, session_id)

    monkeypatch.setattr(migrate, "remove_session", remove)
    report = migrate_sessions(source, goal)
    assert report.moved == [session.id]
    assert len(refused) == 1 and "already open for writing" in refused[0]
