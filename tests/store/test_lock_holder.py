"""A refused writer is told who holds the session: the holder's pid and what it is (``dsh
web``, ``dsh run``…), so a user whose ``dsh undo`` is refused knows the page that has it open,
and what lets it in, in the same line: stopping that server, leaving the session in the terminal
UI, waiting for a ``dsh run``'s turn."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from dsh.errors import SessionLockedError
from dsh.store.locking import acquire_write_lock


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
