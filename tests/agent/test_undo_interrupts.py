"""Ctrl-C during an undo (real SIGINTs, raised in this process at the named points): it waits
until the undo's files are consistent and its command is answered (``HeldInterrupts``), then
goes on as it would have. A second Ctrl-C while the undo takes its steps back used to stop the
take-back itself, leaving a file moved aside under a command already answered, which no later
clean-up looked at. A process killed while it takes them back (SIGKILL: nothing can hold that
off) leaves its command unanswered, and the next open cleans up after it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.held_interrupts import HeldInterrupts
from dsh.agent.undo import undo_last_turn
from dsh.events import CommandDoneEvent, CommandRunEvent
from dsh.surface import Session
from tests.agent.conftest import Harness
from tests.agent.test_undo_kill import HEAD, USER_FILES, changed_turn, listing

AS_THE_TURN_LEFT_THEM = {"a.txt": "A\n", "b.txt": "B\n", "new.txt": "made\n", **USER_FILES}
STOPPED = (
    "Undo of turn 1 stopped: interrupted before it was done\n"
    "  nothing changed: every file is as the turn left it"
)


@pytest.fixture
def sigint(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Any], None]]:
    """Install a SIGINT handler for the test (put back after it)."""
    previous = signal.getsignal(signal.SIGINT)

    def install(handler: Any) -> None:
        signal.signal(signal.SIGINT, handler)

    yield install
    signal.signal(signal.SIGINT, previous)


def ctrl_c_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C as new.txt is moved aside, and a second as the undo starts putting it back."""
    real = os.rename

    def rename(src: Any, dst: Any, **dirs: Any) -> None:
        if os.fspath(src).endswith(".old"):  # taking the step back: the second Ctrl-C
            signal.raise_signal(signal.SIGINT)
        real(src, dst, **dirs)
        if os.fspath(dst).endswith(".old"):  # new.txt moved aside: the first Ctrl-C
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(os, "rename", rename)


def undo_answers(harness: Harness) -> list[Any]:
    with Session.open(harness.store, harness.session.id) as session:
        return [e.data for e in session.of_type(CommandDoneEvent)]


def test_a_second_ctrl_c_while_an_undo_takes_its_steps_back_leaves_nothing_aside(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, sigint: Callable[[Any], None]
) -> None:
    changed_turn(harness)
    sigint(signal.default_int_handler)  # as in `dsh undo`: a Ctrl-C raises KeyboardInterrupt
    ctrl_c_twice(monkeypatch)
    with (
        Session.open(harness.store, harness.session.id, writable=True) as session,
        pytest.raises(KeyboardInterrupt),
    ):
        undo_last_turn(session)
    monkeypatch.undo()
    assert listing(harness.workspace) == AS_THE_TURN_LEFT_THEM  # nothing aside, nothing lost
    (answer,) = undo_answers(harness)
    assert not answer.ok and answer.text == STOPPED
    with Session.open(harness.store, harness.session.id, writable=True) as session:
        assert session.warnings == []  # nothing for the next open to clean up
        result = undo_last_turn(session)
    assert result.ok and result.lines[0] == "Undid turn 1:"
    assert listing(harness.workspace) == {"a.txt": "a\n", "b.txt": "b\n", **USER_FILES}


def test_ctrl_c_reaches_its_handler_only_once_the_files_and_the_log_agree(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, sigint: Callable[[Any], None]
) -> None:
    """Each Ctrl-C held is delivered, in order, to the handler that was there (here one that
    notes what it finds): after the steps were taken back and the command answered."""
    changed_turn(harness)
    seen: list[tuple[dict[str, str], int]] = []
    session = Session.open(harness.store, harness.session.id, writable=True)

    def handler(signum: int, frame: Any) -> None:
        seen.append((listing(harness.workspace), len(session.of_type(CommandDoneEvent))))

    sigint(handler)
    ctrl_c_twice(monkeypatch)
    try:
        result = undo_last_turn(session)
    finally:
        session.close()
    assert result.text == STOPPED and not result.ok
    assert seen == [(AS_THE_TURN_LEFT_THEM, 1), (AS_THE_TURN_LEFT_THEM, 1)]
    assert signal.getsignal(signal.SIGINT) is handler  # put back


def test_a_ctrl_c_after_the_last_file_lets_the_undo_finish(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, sigint: Callable[[Any], None]
) -> None:
    """Stopping is looked at between files: once every file is done, finishing (the file
    moved aside unlinked, the command answered) is what leaves things whole."""
    changed_turn(harness)
    sigint(signal.default_int_handler)
    real = os.unlink

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        if ".dsh-undo-" in os.fspath(path):
            signal.raise_signal(signal.SIGINT)
        real(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    with (
        Session.open(harness.store, harness.session.id, writable=True) as session,
        pytest.raises(KeyboardInterrupt),
    ):
        undo_last_turn(session)
    monkeypatch.undo()
    assert listing(harness.workspace) == {"a.txt": "a\n", "b.txt": "b\n", **USER_FILES}
    (answer,) = undo_answers(harness)
    assert answer.ok and answer.text.startswith("Undid turn 1:")


def test_held_interrupts_change_nothing_outside_the_main_thread(
    sigint: Callable[[Any], None],
) -> None:
    def handler(signum: int, frame: Any) -> None:
        pass

    sigint(handler)
    inside: list[Any] = []

    def work() -> None:
        with HeldInterrupts() as held:
            inside.append(signal.getsignal(signal.SIGINT))
            inside.append(held.requested)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert inside == [handler, False]


KILLED_WHILE_TAKING_BACK = """
import os, signal, sys
from pathlib import Path
from dsh.agent.undo import undo_last_turn
from dsh.store import JsonlStore
from dsh.surface import Session

home, session_id = Path(sys.argv[1]), sys.argv[2]
real = os.rename


def rename(src, dst, **dirs):
    if os.fspath(src).endswith(".old"):  # putting new.txt back after the Ctrl-C: killed
        os.kill(os.getpid(), signal.SIGKILL)
    real(src, dst, **dirs)
    if os.fspath(dst).endswith(".old"):
        signal.raise_signal(signal.SIGINT)  # the Ctrl-C, held until the next file


os.rename = rename
session = Session.open(JsonlStore(home), session_id, writable=True)
undo_last_turn(session)
"""


def test_a_process_killed_while_its_undo_takes_its_steps_back_is_cleaned_up_at_the_next_open(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    changed_turn(harness)
    command = [sys.executable, "-c", KILLED_WHILE_TAKING_BACK]
    child = subprocess.run(
        [*command, str(harness.store.home), harness.session.id],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, (child.stdout, child.stderr)
    with Session.open(harness.store, harness.session.id) as session:
        (run,) = [e.data for e in session.of_type(CommandRunEvent)]
        assert not session.of_type(CommandDoneEvent)  # killed before it answered
    tag = run.command_id.removeprefix("cmd-")
    assert f".new.txt.dsh-undo-{tag}.old" in listing(harness.workspace)
    with Session.open(harness.store, harness.session.id, writable=True) as session:
        assert session.warnings == [  # killed before b.txt was put back as the turn left it
            f"{HEAD}cleaned up after it: put back new.txt; undo again to finish it (b.txt "
            "already as before the turn)"
        ]
    assert listing(harness.workspace) == {**AS_THE_TURN_LEFT_THEM, "b.txt": "b\n"}
    with Session.open(harness.store, harness.session.id, writable=True) as session:
        result = undo_last_turn(session)
    assert result.ok, result.lines
    assert listing(harness.workspace) == {"a.txt": "a\n", "b.txt": "b\n", **USER_FILES}
