"""``/undo`` in the terminal UI: the last turn's file edits taken back (``dsh.agent.undo``), its
answer shown once, live and after reopening; a dry run or a refusal changes nothing."""

from __future__ import annotations

from typing import Any

from dsh.events import CommandDoneEvent, CommandRunEvent, UserMessageEvent
from tests.tui.conftest import Rig, run_prompt, settle, submit
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
        await submit(pilot, "/undo")
        await settle(pilot, lambda: "/undo waits for the running turn" in flat(app))
        await pilot.press("escape")
        await settle(pilot, lambda: not app.running)

    run(app, body)
