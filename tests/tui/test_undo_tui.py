"""``/undo`` in the terminal UI: the last turn's file edits taken back (``dsh.agent.undo``), its
answer shown once, live and after reopening; a dry run or a refusal changes nothing."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from dsh.events import CommandDoneEvent, CommandRunEvent, UserMessageEvent
from dsh.surface import Session
from dsh.tui.app import UNDO_NOT_STOPPED
from tests.tui.conftest import SETTLE_TIMEOUT, Rig, run_prompt, settle, submit
from tests.tui.test_pilot import logged, run, text_of

EDIT = {
    "toolCalls": [
        {"name": "edit_file", "arguments": {"path": "notes.txt", "old": "beta", "new": "BETA"}}
    ]
}
ORIGINAL = "alpha\nbeta\ngamma\n"


def flat(app: Any) -> str:
    return " ".join(text_of(app).split())  # notes wrap at the terminal's width


def test_undo_restores_the_last_turns_edit_and_its_answer_shows_once_live_and_reopened(rig: Rig):
    notes = rig.workspace / "notes.txt"
    app = rig.app([EDIT, {"text": "edited"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "capitalise beta")
        assert notes.read_text() == "alpha\nBETA\ngamma\n"
        await submit(pilot, "/undo --dry-run")
        await settle(pilot, lambda: "Would undo turn 1:" in flat(app))
        assert notes.read_text() == "alpha\nBETA\ngamma\n"
        assert not any(isinstance(e, CommandRunEvent) for e in logged(app))
        await submit(pilot, "/undo")
        await settle(pilot, lambda: "Undid turn 1: restored notes.txt" in flat(app))
        await pilot.pause()
        assert notes.read_text() == ORIGINAL
        assert flat(app).count("Undid turn 1: restored notes.txt") == 1
        assert "context from undo" in flat(app)  # what the model is told, folded
        events = logged(app)
        assert isinstance(events[-3], CommandRunEvent) and events[-3].data.name == "undo"
        assert isinstance(events[-2], UserMessageEvent)
        assert isinstance(events[-1], CommandDoneEvent) and events[-1].data.ok
        await submit(pilot, "/undo")
        await settle(pilot, lambda: "Nothing to undo" in flat(app))

    run(app, body)
    (header,) = rig.store.list()
    reopened = rig.app([], resume=header.id)

    async def check(pilot: Any) -> None:
        assert flat(reopened).count("Undid turn 1: restored notes.txt") == 1

    run(reopened, check)


def test_undo_refuses_a_file_changed_since_the_turn_and_changes_nothing(rig: Rig):
    notes = rig.workspace / "notes.txt"
    app = rig.app([EDIT, {"text": "edited"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "capitalise beta")
        notes.write_text("my own edit\n")
        await submit(pilot, "/undo")
        await settle(pilot, lambda: "Not undone: turn 1" in flat(app))
        assert "notes.txt: changed since turn 1" in flat(app)
        assert notes.read_text() == "my own edit\n"

    run(app, body)


def test_undo_waits_for_a_running_turn_and_takes_only_dry_run_as_argument(rig: Rig):
    app = rig.app([{"text": "far too late", "delayMs": 3_600_000}])  # only a cancel ends it

    async def body(pilot: Any) -> None:
        await submit(pilot, "/undo everything")
        await settle(pilot, lambda: "/undo takes no argument but --dry-run" in flat(app))
        await submit(pilot, "take your time")
        await settle(pilot, lambda: app.running and app.controller.busy is not None)
        await submit(pilot, "/undo")  # queued: it runs when the turn ends well
        await settle(pilot, lambda: app.prompt_box.queued == "/undo")
        await pilot.press("escape")  # takes it back
        await settle(pilot, lambda: app.prompt_box.value == "/undo")
        await pilot.press("escape")
        await settle(pilot, lambda: not app.running)

    run(app, body)


def test_undo_changes_the_files_in_a_worker_thread_while_the_screen_stays_live(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
):
    """``/undo``'s file work runs off the event loop: held at its fsync of the restored
    bytes, the app still says "undoing…" and takes a draft, which waits for the undo (the work
    slot) and is sent after it. The session is appended to only on the loop's thread."""
    notes = rig.workspace / "notes.txt"
    app = rig.app([EDIT, {"text": "edited"}, {"text": "after the undo"}])
    held, go = threading.Event(), threading.Event()
    fsync_threads: list[str] = []
    append_threads: set[str] = set()
    real_fsync, real_append = os.fsync, Session.append

    def fsync(fd: int) -> None:
        if ".dsh-undo-" in os.readlink(f"/proc/self/fd/{fd}"):  # the restored bytes
            fsync_threads.append(threading.current_thread().name)
            held.set()
            go.wait(timeout=SETTLE_TIMEOUT)  # the loop, blocked here, would show nothing new
        real_fsync(fd)

    def append(self: Session, *args: Any, **kwargs: Any) -> Any:
        append_threads.add(threading.current_thread().name)
        return real_append(self, *args, **kwargs)

    said: list[str] = []
    real_notify = app.notify

    def notify(message: str, *args: Any, **kwargs: Any) -> None:
        said.append(message)
        real_notify(message, *args, **kwargs)

    app.notify = notify  # type: ignore[method-assign]

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "capitalise beta")
        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(Session, "append", append)
        await submit(pilot, "/undo")
        await settle(pilot, held.is_set)
        await pilot.pause()
        assert app.status_bar.info.busy == "undoing…"
        assert "esc" not in str(app.query_one("#hint").render())  # esc cannot stop it
        await pilot.press("ctrl+c")  # a key, not a signal: the undo is not stopped
        assert said == [UNDO_NOT_STOPPED] and app.running
        await submit(pilot, "and now?")
        assert app.prompt_box.queued == "and now?"  # the composer took it; it waits
        assert notes.read_text() == "alpha\nBETA\ngamma\n"
        go.set()
        await settle(pilot, lambda: "after the undo" in flat(app))
        assert notes.read_text() == ORIGINAL
        assert flat(app).index("Undid turn 1") < flat(app).index("and now?")

    run(app, body)
    main = threading.main_thread().name
    assert fsync_threads and main not in fsync_threads
    assert append_threads == {main}


@pytest.mark.usefixtures("patient_quit")
def test_quitting_while_undo_changes_the_files_waits_for_its_answer(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
):
    """ctrl+q while ``/undo``'s file work runs in its thread: an undo is not cancelled, and the
    app leaves only once the files are restored and the answer is logged."""
    notes = rig.workspace / "notes.txt"
    app = rig.app([EDIT, {"text": "edited"}])
    held, go = threading.Event(), threading.Event()
    order: list[str] = []
    real_fsync, real_append, real_exit = os.fsync, Session.append, app.exit

    def fsync(fd: int) -> None:
        if ".dsh-undo-" in os.readlink(f"/proc/self/fd/{fd}"):
            held.set()
            go.wait(timeout=SETTLE_TIMEOUT)
        real_fsync(fd)

    def append(self: Session, event: Any, *args: Any, **kwargs: Any) -> Any:
        if type(event).__name__ == "CommandDone":
            order.append("answered")
        return real_append(self, event, *args, **kwargs)

    def exit_(*args: Any, **kwargs: Any) -> None:
        order.append("exit")
        real_exit(*args, **kwargs)

    app.exit = exit_  # type: ignore[method-assign]
    real_cancel = app.controller.cancel

    def cancel(*args: Any) -> bool:  # the quit asks first; the undo goes on from here
        cancelled = real_cancel(*args)
        go.set()
        return cancelled

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "capitalise beta")
        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(Session, "append", append)
        monkeypatch.setattr(app.controller, "cancel", cancel)
        await submit(pilot, "/undo")
        await settle(pilot, held.is_set)
        await pilot.press("ctrl+q")
        await pilot.pause()

    run(app, body)
    assert order == ["answered", "exit"]
    assert notes.read_text() == ORIGINAL
    (header,) = rig.store.list()
    with Session.open(rig.store, header.id) as session:
        assert session.of_type(CommandDoneEvent)[-1].data.ok
