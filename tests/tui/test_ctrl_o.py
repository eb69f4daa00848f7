"""ctrl+o acts on the card people chose (up/down, a click) until they send something; else on
the newest card, or the last one on the screen when they scrolled away from the end. A card
ctrl+o itself marked does not stay current once a newer card comes (it used to: ctrl+o then
toggled that old card and scrolled there, and the transcript stopped following)."""

from __future__ import annotations

import asyncio
from typing import Any

from dsh.tui import DshApp
from dsh.tui.transcript_view import TranscriptView
from tests.tui.conftest import SIZE, Rig, run_prompt, settle
from tests.tui.test_follow import at_end


def expanded(view: TranscriptView) -> list[str]:
    return [b.label for b in view.model.blocks if b.expandable and b.expanded]


def run(app: DshApp, body: Any) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await body(pilot, app.transcript)

    asyncio.run(main())


SCRIPT = [
    {
        "toolCalls": [
            {"name": "edit_file", "arguments": {"path": "notes.txt", "old": "beta", "new": "BETA"}}
        ]
    },
    {"text": "Edited."},
    {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
    {"text": "Ran it."},
]


def test_ctrl_o_after_a_new_card_toggles_the_new_card_and_keeps_following(rig: Rig):
    app = rig.app(SCRIPT)

    async def body(pilot: Any, view: TranscriptView) -> None:
        for i in range(40):
            app.note(f"note {i}")
        await run_prompt(pilot, "edit it")
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert expanded(view) == ["edit_file"]
        await run_prompt(pilot, "run it")
        assert view.selected is None  # the mark left the older card
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert expanded(view) == ["edit_file", "bash"] and at_end(view)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert expanded(view) == ["edit_file"] and at_end(view)

    run(app, body)


def test_a_chosen_card_stays_ctrl_o_s_until_a_prompt_is_sent(rig: Rig):
    app = rig.app(SCRIPT)

    async def body(pilot: Any, view: TranscriptView) -> None:
        await run_prompt(pilot, "edit it")
        view.focus()
        await pilot.press("up")  # chosen: the edit card
        await pilot.pause()
        app.note("later output")
        await pilot.pause()
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert expanded(view) == ["edit_file"]
        app.prompt_box.focus()
        await run_prompt(pilot, "run it")  # sending lets go of the choice
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert expanded(view) == ["edit_file", "bash"]

    run(app, body)


def test_scrolled_away_ctrl_o_toggles_the_last_card_on_the_screen(rig: Rig):
    app = rig.app(SCRIPT)

    async def body(pilot: Any, view: TranscriptView) -> None:
        await run_prompt(pilot, "edit it")
        for i in range(60):
            app.note(f"note {i}")
        await run_prompt(pilot, "run it")
        view.scroll_home(animate=False)
        await settle(pilot, lambda: round(view.scroll_y) == 0)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert expanded(view) == ["edit_file"] and round(view.scroll_y) == 0

    run(app, body)
