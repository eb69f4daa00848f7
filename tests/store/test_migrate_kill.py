"""``dsh sessions migrate`` killed (SIGKILL) while it writes a session's copy: the next migrate
completes the move. The copy used to be written in two steps (its header, then its events), and
a JSONL copy straight into its final name, so a kill in between left a copy with fewer events,
or a torn one, in the target store; every later migrate then reported the session as "already in
the target; left in both" and a resume from the target store continued the truncated copy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dsh.events import encode_event
from dsh.store import JsonlStore, SqliteStore
from dsh.store.migrate import migrate_sessions
from tests.helpers import append_chat_turn, append_tool_turn, new_session

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
