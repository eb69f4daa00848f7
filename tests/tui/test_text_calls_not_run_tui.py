"""The terminal UI says, in a dim note under a small model's reply, that the tool call it wrote
inside its prose was not run (``textCallsNotRun``), live and after the session is resumed. The
real app under its pilot, with the scripted model on a route that reads calls written as
text."""

from __future__ import annotations

import json
from typing import Any

from dsh.transcript import not_run_note
from dsh.tui.blocks import DIM, block_rows
from tests.tui.conftest import Rig, run_prompt
from tests.tui.test_pilot import run, text_of

EDIT = {"name": "edit_file", "arguments": {"path": "notes.txt", "old": "alpha", "new": "omega"}}
CLAIM = f"I will fix it.\n<tools>{json.dumps(EDIT)}</tools>\nDone: the file is fixed."
NOTE = not_run_note(["edit_file"])


def flat(text: str) -> str:
    return " ".join(text.split())


def note_styles(app: Any) -> list[Any]:
    """The styles of the note's words on screen (in the reply's block)."""
    (block,) = [b for b in app.transcript.model.blocks if b.kind == "assistant"]
    rows = block_rows(block, 100, show_reasoning=False, details={})
    return [seg.style for row in rows for seg in row if "not run" in seg.text]


def test_the_reply_shows_a_dim_note_naming_the_call_not_run_live_and_resumed(rig: Rig) -> None:
    app = rig.app([{"text": CLAIM}], agent_config={"text_tool_calls": True})
    opened: list[str] = []

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "fix notes.txt")
        assert flat(NOTE) in flat(text_of(app))
        assert note_styles(app) == [DIM]
        assert app.controller.session is not None
        opened.append(app.controller.session.id)

    run(app, body)
    assert (rig.workspace / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"  # nothing ran
    again = rig.app([], resume=opened[0])

    async def reopened(pilot: Any) -> None:
        assert flat(NOTE) in flat(text_of(again))

    run(again, reopened)


def test_a_reply_without_calls_in_its_text_has_no_note(rig: Rig) -> None:
    app = rig.app([{"text": "alpha is on line 1."}], agent_config={"text_tool_calls": True})

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "where is alpha?")
        assert "not run" not in text_of(app) and note_styles(app) == []

    run(app, body)
