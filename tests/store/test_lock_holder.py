"""A refused writer is told who holds the session: the holder's pid and what it is (``dsh
web``, ``dsh run``…), so a user whose ``dsh undo`` is refused knows the page that has it open,
and what lets it in, in the same line: stopping that server, leaving the session in the terminal
UI, waiting for a ``dsh run``'s turn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.errors import SessionLockedError
from dsh.store import open_store
from dsh.store.locking import Holder, acquire_write_lock, holder_words, session_holder
from dsh.surface import Session
from tests.helpers import writer_in_child_process


def refusal(lock: Path) -> str:
    with pytest.raises(SessionLockedError) as caught:
        acquire_write_lock(lock, "s1")
    assert caught.value.holder_pid == os.getpid()
    return str(caught.value)


def test_the_refusal_names_the_holders_pid_and_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = tmp_path / "lock"
    monkeypatch.setattr(sys, "argv", ["/home/u/.local/bin/dsh", "web", "--port", "3081"])
    held = acquire_write_lock(lock, "s1")
    try:
        message = refusal(lock)
    finally:
        held.release()
    assert message == (
        f"session s1 is already open for writing by process {os.getpid()} (dsh web), which holds "
        "it until that server stops: go on in its page, or stop that `dsh web` (Ctrl-C where it "
        "runs)"
    )


def test_the_terminal_ui_holder_is_plain_dsh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = tmp_path / "lock"
    monkeypatch.setattr(sys, "argv", ["dsh", "--resume", "s1"])
    held = acquire_write_lock(lock, "s1")
    try:
        assert refusal(lock).endswith(
            f"by process {os.getpid()} (dsh), which holds it while it is open there: leave it "
            "there first (/new, /resume another session, or quit)"
        )
    finally:
        held.release()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["dsh", "run", "--session", "s1", "go on"],
            "(dsh run), which holds it until its turn ends: try again then",
        ),
        (["dsh", "undo", "s1"], "(dsh undo): try again once that process is done with it"),
        (["python", "-c"], "(python): try again once that process is done with it"),
    ],
)
def test_the_refusal_says_what_lets_the_writer_in_by_what_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], said: str
) -> None:
    lock = tmp_path / "lock"
    monkeypatch.setattr(sys, "argv", argv)
    held = acquire_write_lock(lock, "s1")
    try:
        message = refusal(lock)
    finally:
        held.release()
    assert message == f"session s1 is already open for writing by process {os.getpid()} {said}"
    assert "\n" not in message


def test_a_lock_an_older_dsh_wrote_names_the_pid_alone(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    held = acquire_write_lock(lock, "s1")
    try:
        lock.write_text(f"{os.getpid()}\n")  # the older format: the pid only
        assert refusal(lock).endswith(
            f"by process {os.getpid()}: try again once that process is done with it"
        )
    finally:
        held.release()


def test_a_hostile_label_is_made_printable_and_short(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    held = acquire_write_lock(lock, "s1")
    try:
        lock.write_text(f"{os.getpid()}\n\x1b]0;owned\x07{'x' * 300}\n")
        message = refusal(lock)
    finally:
        held.release()
    assert "\x1b" not in message and "\x07" not in message
    assert f"(?]0;owned?{'x' * 50}): try again once" in message


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_the_holder_elsewhere_is_found_without_taking_the_lock_and_only_while_it_holds(
    tmp_path: Path, backend: str
) -> None:
    """What the session picker marks busy and refuses (``session_holder``): a second process
    that holds the session, named with its label; then, once it is killed, nothing (its pid
    stays in the file, the flock went with it), and the file left as it was, so the next writer
    still reports the holder that stopped without closing. A live pid in a lock file nobody
    holds (a crashed holder's, reused) is not a holder either: the flock says so."""
    store = open_store(tmp_path / "home", backend)
    with Session.create(store, cwd=tmp_path) as session:
        session_id = session.id
    assert session_holder(store, session_id) is None  # released cleanly: an empty file
    with writer_in_child_process(store.home, backend, session_id, ["dsh", "web"]) as pid:
        assert session_holder(store, session_id) == Holder(pid, "dsh web")
        assert session_holder(store, session_id) == Holder(pid, "dsh web")  # left held
        assert holder_words(pid, "dsh web").startswith(
            f"process {pid} (dsh web), which holds it until that server stops"
        )
    lock = store.lock_path(session_id)
    left = lock.read_bytes()
    assert left.startswith(f"{pid}\n".encode())
    assert session_holder(store, session_id) is None
    assert lock.read_bytes() == left
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as unrelated:
        try:
            lock.write_text(f"{unrelated.pid}\ndsh web\n")
            assert session_holder(store, session_id) is None
        finally:
            unrelated.kill()
    lock.write_text(f"{os.getpid()}\ndsh\n")
    assert session_holder(store, session_id) is None  # this process: not elsewhere
    for no_process in ("0", "9" * 30):  # kill(0, 0) would signal this process's group
        lock.write_text(f"{no_process}\ndsh\n")
        assert session_holder(store, session_id) is None
    assert session_holder(store, "no-such-session") is None
    assert session_holder(object(), session_id) is None  # a store with no lock files
