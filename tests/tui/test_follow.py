"""The transcript follows its end: sending something brings the view back to the end, and new
output shows as it comes unless the reader scrolled away from the end (expanding a card is
not scrolling away while its first row stays on screen)."""

from __future__ import annotations

import asyncio
from typing import Any

from dsh.tui import DshApp
from dsh.tui.transcript_view import TranscriptView
from tests.tui.conftest import SIZE, Rig, approval_ready, run_prompt, settle, submit
from tests.tui.test_virtual_scroll import screen_rows


def at_end(view: TranscriptView) -> bool:
    return view.max_scroll_y > 0 and round(view.scroll_y) == view.max_scroll_y


def run(app: DshApp, body: Any) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await body(pilot, app.transcript)

    asyncio.run(main())


def test_a_prompt_sent_after_ctrl_o_shows_itself_its_approval_and_its_answer(rig: Rig):
    (rig.workspace / "long.txt").write_text("".join(f"line {i}\n" for i in range(200)))
    app = rig.app(
        [
            {"toolCalls": [{"name": "read_file", "arguments": {"path": "long.txt"}}]},
            {"text": "Read it."},
            {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
            {"text": "fresh answer"},
        ],
        approval="ask",
    )

    async def body(pilot: Any, view: TranscriptView) -> None:
        await run_prompt(pilot, "read it")
        await pilot.press("ctrl+o")  # the card is taller than the screen: its top shows
        assert screen_rows(view)[0] == "▌ ▾ read_file" and not at_end(view)
        await submit(pilot, "next")
        await approval_ready(pilot)
        await pilot.pause()
        rows = screen_rows(view)
        assert at_end(view) and "❯ next" in rows and "  ▸ bash  echo hi" in rows
        await pilot.press("o")
        await settle(pilot, lambda: not app.running)
        await pilot.pause()
        assert at_end(view) and "● fresh answer" in screen_rows(view)

    run(app, body)


def test_expanding_the_last_card_at_the_end_keeps_following(rig: Rig):
    (rig.workspace / "a.txt").write_text("first line\nsecond line\nthird line\n")
    app = rig.app(
        [
            {"toolCalls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"text": "Read it."},
        ]
    )

    async def body(pilot: Any, view: TranscriptView) -> None:
        for i in range(40):
            app.note(f"note {i}")
        await run_prompt(pilot, "read a.txt")
        assert at_end(view)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert at_end(view) and "▌     3   third line" in screen_rows(view)
        app.note("later output")
        await pilot.pause()
        assert at_end(view) and "  later output" in screen_rows(view)

    run(app, body)


def test_a_view_at_the_end_keeps_its_end_in_view_when_the_composer_grows(rig: Rig):
    # The composer growing with a multi-line draft hid the transcript's last rows (the reply
    # being answered) until the draft was cleared.
    app = rig.app([{"text": "the question you answer"}])

    async def body(pilot: Any, view: TranscriptView) -> None:
        for i in range(40):
            app.note(f"note {i}")
        await run_prompt(pilot, "ask me")
        assert at_end(view) and "● the question you answer" in screen_rows(view)
        height = view.size.height
        for word in ("one", "two", "three", "four", "five", "six", "seven", "eight"):
            await pilot.press(*word, "ctrl+j")
        await settle(pilot, lambda: view.size.height <= height - 8)
        await pilot.pause()
        assert at_end(view) and "● the question you answer" in screen_rows(view)
        await pilot.press("escape")  # the draft cleared: the view grows back, at its end
        await settle(pilot, lambda: view.size.height == height)
        await pilot.pause()
        assert at_end(view) and "● the question you answer" in screen_rows(view)

    run(app, body)


def test_a_view_scrolled_away_from_the_end_stays_where_it_is_when_the_composer_grows(rig: Rig):
    app = rig.app([{"text": "the answer"}])

    async def body(pilot: Any, view: TranscriptView) -> None:
        for i in range(60):
            app.note(f"note {i}")
        await run_prompt(pilot, "ask me")
        await pilot.press("pageup")
        await pilot.pause()
        top = round(view.scroll_y)
        assert not at_end(view)
        height = view.size.height
        for word in ("one", "two", "three", "four"):
            await pilot.press(*word, "ctrl+j")
        await settle(pilot, lambda: view.size.height <= height - 4)
        await pilot.pause()
        assert round(view.scroll_y) == top and not at_end(view)

    run(app, body)
