"""Forks of one session made at the same time take different numbers (``dsh.agent.fork``): the
number is chosen and the fork's title written under the store's ``fork-numbering`` lock, so a
fork made while another process is between choosing its number and writing it waits for it,
then counts it. JSONL and SQLite stores, a real second process."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dsh.agent.fork import fork_session
from dsh.store import open_store
from dsh.surface import Session
from dsh.transcript.titles import session_title
from tests.helpers import append_chat_turn, new_session

_FORKING = """
import sys
from pathlib import Path
from dsh.agent import fork
from dsh.store import open_store

chosen = fork.fork_title
def paused(*args, **kwargs):
    title = chosen(*args, **kwargs)
    print("chosen", title, flush=True)
    sys.stdin.readline()  # the test lets it go on
    return title
fork.fork_title = paused
made = fork.fork_session(open_store(Path(sys.argv[1]), sys.argv[2]), sys.argv[3])
print(made.session_id, flush=True)
"""

WAIT = 60.0
"""The longest a step is waited for before the test fails (never reached when it passes)."""


def title_of(store: object, session_id: str) -> str | None:
    with Session.open(store, session_id) as session:  # type: ignore[arg-type]
        return session_title(session.events)


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_a_fork_made_while_another_process_numbers_one_takes_the_next_number(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
):
    home = tmp_path / "home"
    store = open_store(home, backend)
    with new_session(store) as session:
        append_chat_turn(session, "plan the release", "ok")
        parent = session.id
    argv = [sys.executable, "-c", _FORKING, str(home), backend, parent]
    other = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert other.stdin is not None and other.stdout is not None
        line = other.stdout.readline()
        assert line == "chosen plan the release (fork)\n", other.communicate()[1]

        # this process forks meanwhile; it is done, or waits for the other's lock
        waiting_or_done = threading.Event()
        real_flock = fcntl.flock

        def spied_flock(fd: int, operation: int) -> None:
            try:
                real_flock(fd, operation)
            except BlockingIOError:
                if threading.current_thread() is forking and operation & fcntl.LOCK_EX:
                    waiting_or_done.set()  # refused: the other process holds the lock
                raise

        monkeypatch.setattr(fcntl, "flock", spied_flock)
        made: list[str] = []

        def fork_here() -> None:
            try:
                made.append(fork_session(store, parent).session_id)
            finally:
                waiting_or_done.set()

        forking = threading.Thread(target=fork_here)
        forking.start()
        assert waiting_or_done.wait(WAIT)
        other.stdin.write("go\n")
        other.stdin.flush()
        out, err = other.communicate(timeout=WAIT)
        assert other.returncode == 0, err
        forking.join(WAIT)
        assert not forking.is_alive() and made
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
    theirs = out.strip()
    assert title_of(store, theirs) == "plan the release (fork)"
    assert title_of(store, made[0]) == "plan the release (fork 2)"
    assert (home / "locks" / "_fork-numbering.lock").is_file()
