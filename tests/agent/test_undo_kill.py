"""An undo killed mid-way (SIGKILL: no ``except`` or ``finally`` runs) leaves dsh's own files
beside the workspace's files — a restore's ``.NAME.dsh-undo-TAG.new`` before its rename, a
deleted file's ``.NAME.dsh-undo-TAG.old`` before its unlink — and its ``command/run``
unanswered. Opening the session for writing cleans them up (``dsh.agent.undo_recovery``, run by
``Session.open`` for every face), answers the killed command and says so in one warning line,
once; the next undo then undoes the turn. An undo on a session opened without that clean-up does
it itself. Files that only look like dsh's are never touched. The kill is real: a child process
runs the undo and SIGKILLs itself at the named call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.undo import undo_last_turn
from dsh.events import CommandDoneEvent, CommandRunEvent
from dsh.surface import Session
from tests.agent.conftest import Harness
from tests.agent.test_undo import edit, run_turns, turn, write

KILLED_UNDO = """
import os, signal, sys
from pathlib import Path
from dsh.agent.undo import undo_last_turn
from dsh.store import JsonlStore
from dsh.surface import Session

home, session_id, at, nth = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
seen = 0


def killing(real):
    def call(path, *args, **kwargs):  # only undo's own calls count
        global seen
        if ".dsh-undo-" in os.fspath(path):
            seen += 1
            if seen == nth:
                os.kill(os.getpid(), signal.SIGKILL)
        return real(path, *args, **kwargs)
    return call


setattr(os, at, killing(getattr(os, at)))
session = Session.open(JsonlStore(home), session_id, writable=True)
print(undo_last_turn(session).text, flush=True)
"""

DECOY = ".a.txt.dsh-undo-00000000.new"
"""A person's file that looks like one of dsh's, with a tag no undo logged."""
USER_FILES = {"notes.txt": "mine\n", DECOY: "also mine\n"}


def changed_turn(harness: Harness) -> None:
    """Turn 1 edits a.txt, creates new.txt and edits b.txt: undo restores b.txt, deletes
    new.txt, restores a.txt (the file changed last first), then unlinks new.txt's aside."""
    for name, text in {"a.txt": "a\n", "b.txt": "b\n", **USER_FILES}.items():
        (harness.workspace / name).write_text(text)
    run_turns(
        harness, turn(edit("a.txt", "a", "A"), write("new.txt", "made\n"), edit("b.txt", "b", "B"))
    )
    harness.session.close()


def killed_undo(harness: Harness, at: str, nth: int) -> str:
    """Run an undo in a child that SIGKILLs itself at its ``nth`` ``os.<at>`` of an undo file;
    the killed undo's tag."""
    command = [sys.executable, "-c", KILLED_UNDO]
    command += [str(harness.store.home), harness.session.id, at, str(nth)]
    child = subprocess.run(command, capture_output=True, text=True, check=False)
    assert child.returncode == -signal.SIGKILL, (child.stdout, child.stderr)
    with Session.open(harness.store, harness.session.id) as session:
        run = session.of_type(CommandRunEvent)[-1].data
        assert not session.of_type(CommandDoneEvent)  # the killed undo never answered
    return run.command_id.removeprefix("cmd-")


def listing(workspace: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(workspace.iterdir())}


HEAD = "The undo of turn 1 was interrupted (its process ended before it finished); "


@pytest.mark.parametrize(
    ("at", "nth", "left", "said", "as_left"),
    [
        (  # b.txt's new bytes written, not renamed over it
            "replace",
            1,
            ["b.txt.{tag}.new"],
            "removed .b.txt.{tag}.new; undo again to finish it",
            {"a.txt": "A\n", "b.txt": "B\n", "new.txt": "made\n"},
        ),
        (  # b.txt already restored, new.txt moved aside, a.txt's bytes written
            "replace",
            2,
            ["a.txt.{tag}.new", "new.txt.{tag}.old"],
            "removed .a.txt.{tag}.new, put back new.txt; undo again to finish it (b.txt already "
            "as before the turn)",
            {"a.txt": "A\n", "b.txt": "b\n", "new.txt": "made\n"},
        ),
        (  # every file restored, new.txt not yet deleted
            "unlink",
            1,
            ["new.txt.{tag}.old"],
            "put back new.txt; undo again to finish it (a.txt, b.txt already as before the turn)",
            {"a.txt": "a\n", "b.txt": "b\n", "new.txt": "made\n"},
        ),
    ],
    ids=["restore-before-rename", "second-restore-after-a-delete", "delete-before-unlink"],
)
def test_opening_the_session_cleans_up_what_a_killed_undo_left_and_says_so_once(
    tmp_path: Path, at: str, nth: int, left: list[str], said: str, as_left: dict[str, str]
) -> None:
    harness = Harness(tmp_path)
    changed_turn(harness)
    tag = killed_undo(harness, at, nth)
    leftovers = {"." + name.format(tag=f"dsh-undo-{tag}") for name in left}
    names = set(listing(harness.workspace))
    assert {n for n in names if ".dsh-undo-" in n} == leftovers | {DECOY}

    line = HEAD + "cleaned up after it: " + said.format(tag=f"dsh-undo-{tag}")
    with Session.open(harness.store, harness.session.id, writable=True) as session:
        assert session.warnings == [line]  # what every face shows of the open, once
        (killed,) = [e.data for e in session.of_type(CommandDoneEvent)]
        assert not killed.ok and killed.text == line and killed.command_id == f"cmd-{tag}"
        events = len(session.events)
    assert listing(harness.workspace) == {**as_left, **USER_FILES}  # nothing aside, nothing lost

    with Session.open(harness.store, harness.session.id, writable=True) as session:
        assert session.warnings == []  # done once: a second open finds nothing to do
        assert len(session.events) == events
        result = undo_last_turn(session)
        this = session.of_type(CommandDoneEvent)[-1].data
    assert result.ok and result.lines[0] == "Undid turn 1:", result.lines
    assert listing(harness.workspace) == {"a.txt": "a\n", "b.txt": "b\n", **USER_FILES}
    assert this.ok and this.source_event_seq is not None  # turn 1 is undone, once


def test_an_undo_on_a_session_opened_without_the_clean_up_does_it_before_it_plans(
    tmp_path: Path,
) -> None:
    """A session made from its store's log directly (not ``Session.open``) is cleaned up after
    by the undo, whose answer begins with the line that says so."""
    harness = Harness(tmp_path)
    changed_turn(harness)
    tag = killed_undo(harness, "replace", 2)
    with Session(harness.store.open(harness.session.id, writable=True)) as session:
        assert session.warnings == []
        result = undo_last_turn(session)
        dones = [e.data for e in session.of_type(CommandDoneEvent)]
    assert result.ok, result.lines
    assert result.lines[0] == (
        HEAD + f"cleaned up after it: removed .a.txt.dsh-undo-{tag}.new, put back new.txt"
    )
    assert listing(harness.workspace) == {"a.txt": "a\n", "b.txt": "b\n", **USER_FILES}
    killed, this = dones
    assert not killed.ok and killed.text == result.lines[0]
    assert this.ok and this.source_event_seq is not None


def test_a_dry_run_after_a_killed_undo_names_what_the_next_undo_cleans_up_and_changes_nothing(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    changed_turn(harness)
    tag = killed_undo(harness, "replace", 2)
    before = listing(harness.workspace)
    with Session.open(harness.store, harness.session.id) as session:
        events = len(session.events)
        result = undo_last_turn(session, dry_run=True)
        assert len(session.events) == events
    assert result.lines[0] == (
        "The undo of turn 1 was interrupted (its process ended before it finished); the next "
        f"undo cleans up .a.txt.dsh-undo-{tag}.new, .new.txt.dsh-undo-{tag}.old"
    )
    assert listing(harness.workspace) == before


def test_a_file_moved_aside_is_left_and_named_when_its_name_is_taken_again(tmp_path: Path):
    harness = Harness(tmp_path)
    changed_turn(harness)
    tag = killed_undo(harness, "unlink", 1)
    (harness.workspace / "new.txt").write_text("the person's new file\n")
    with Session.open(harness.store, harness.session.id, writable=True) as session:
        (line,) = session.warnings
        result = undo_last_turn(session)
    aside = f".new.txt.dsh-undo-{tag}.old"
    assert line == (
        f"{HEAD}cleaned up after it: left {aside} (new.txt is there again; {aside} holds it as "
        "the turn left it); undo again to finish it (a.txt, b.txt already as before the turn)"
    )
    assert not result.ok  # new.txt changed since the turn: the undo is refused
    assert "new.txt: changed since turn 1" in result.text
    assert (harness.workspace / "new.txt").read_text() == "the person's new file\n"
    assert (harness.workspace / aside).read_text() == "made\n"


def test_a_stopped_undo_puts_back_the_file_it_had_moved_aside(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C or SIGTERM (``KeyboardInterrupt``) mid-way answers the command, so no later undo
    would clean up after it: the steps done are taken back before the exception goes on."""
    from dsh.agent import undo_files

    changed_turn(harness)
    session = Session.open(harness.store, harness.session.id, writable=True)
    real = undo_files._replace
    calls = 0

    def stopped_at_the_second(step: undo_files.FileStep, data: bytes, tag: str) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:  # b.txt restored and new.txt moved aside by now
            raise KeyboardInterrupt
        real(step, data, tag)

    monkeypatch.setattr(undo_files, "_replace", stopped_at_the_second)
    try:
        with pytest.raises(KeyboardInterrupt):
            undo_last_turn(session)
    finally:
        session.close()
    assert listing(harness.workspace) == {
        "a.txt": "A\n",
        "b.txt": "B\n",
        "new.txt": "made\n",
        **USER_FILES,
    }


def test_the_undos_command_is_on_stable_storage_before_it_touches_a_file(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So a power cut mid-way (the page cache lost, not only the process) still leaves the
    ``command/run`` that names the files the clean-up looks for."""
    changed_turn(harness)
    happened: list[str] = []
    real_fsync, real_open = os.fsync, os.open

    def fsync(fd: int) -> None:
        if threading.current_thread().name.startswith("fsync-"):  # the log's group commit
            happened.append("log synced")
        real_fsync(fd)

    def open_(path: Any, *args: Any, **kwargs: Any) -> int:
        if ".dsh-undo-" in os.fspath(path):
            happened.append("file touched")
        return real_open(path, *args, **kwargs)

    with Session.open(harness.store, harness.session.id, writable=True) as session:
        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "open", open_)
        result = undo_last_turn(session)
        monkeypatch.undo()
    assert result.ok, result.lines
    assert happened.index("log synced") < happened.index("file touched"), happened
