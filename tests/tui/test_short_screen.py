"""A terminal a few rows high keeps the prompt usable: the transcript gives up its rows first,
then the keys hint, then the prompt's border, then the status bar; the prompt's text row is on
screen down to a single row, takes what is typed and sends it. (Under three rows it used to be
laid out past the bottom: what was typed could not be seen.)"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widget import Widget

from dsh.tui.short_screen import Fit, fit
from tests.tui.conftest import SIZE, Rig, settle, status_at_rest
from tests.tui.test_pilot import lines_of, run

WIDTH = 60


@pytest.mark.parametrize(
    ("height", "expected"),
    [
        (1, Fit(1, find=False, status=False, border=False, hint=False, transcript=0)),
        (2, Fit(1, find=False, status=True, border=False, hint=False, transcript=0)),
        (3, Fit(1, find=False, status=True, border=False, hint=False, transcript=1)),
        (4, Fit(1, find=False, status=True, border=True, hint=False, transcript=0)),
        (5, Fit(1, find=False, status=True, border=True, hint=True, transcript=0)),
        (9, Fit(1, find=False, status=True, border=True, hint=True, transcript=4)),
    ],
)
def test_the_transcript_yields_first_then_the_hint_the_border_and_the_status(
    height: int, expected: Fit
) -> None:
    assert fit(height, 1, finding=False) == expected


def test_a_tall_draft_keeps_the_status_and_scrolls_in_a_prompt_without_border() -> None:
    assert fit(6, 8, finding=False) == Fit(5, False, True, False, False, 0)
    assert fit(20, 30, finding=False) == Fit(10, False, True, True, True, 6)
    assert fit(2, 1, finding=True) == Fit(1, True, False, False, False, 0)  # find has the focus


def on_screen(app: Any, widget: Widget) -> bool:
    return widget.display and app.screen.region.contains_region(widget.content_region)


@pytest.mark.parametrize("height", [1, 2, 3, 4, 5])
def test_the_prompt_stays_on_screen_takes_typing_and_sends_at_every_tiny_height(
    rig: Rig, height: int
) -> None:
    app = rig.app([{"text": "Heard you."}])

    async def body(pilot: Any) -> None:
        prompt = app.prompt_box
        await pilot.pause()
        assert prompt.has_focus and on_screen(app, prompt)
        assert app.screen.virtual_size.height <= height  # nothing laid out past the bottom
        assert on_screen(app, app.status_bar) == (height >= 2)
        await pilot.press("h", "i")
        assert prompt.text == "hi"
        await pilot.press("enter")
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        assert "● Heard you." in lines_of(app)
        assert prompt.text == "" and prompt.has_focus and on_screen(app, prompt)

    run(app, body, (WIDTH, height))


def test_growing_the_terminal_again_gives_everything_back(rig: Rig) -> None:
    app = rig.app([])

    async def body(pilot: Any) -> None:
        hint = app.query_one("#hint")
        await pilot.resize_terminal(WIDTH, 2)
        await settle(pilot, lambda: not app.transcript.display and not hint.display)
        await pilot.resize_terminal(*SIZE)
        parts = [app.transcript, app.status_bar, app.prompt_box, hint]
        await settle(pilot, lambda: all(on_screen(app, part) for part in parts))
        assert app.prompt_box.outer_size.height == 3  # its border is back

    run(app, body, SIZE)


def test_two_row_terminal_snapshot(snap_compare, rig: Rig):
    app = rig.app([{"text": "Heard you."}])

    async def tiny(pilot: Any) -> None:
        await settle(pilot, lambda: app.ready)
        app.prompt_box.value = "hi"
        await pilot.press("enter")
        await settle(pilot, lambda: not app.running and status_at_rest(app))
        await pilot.press(*"a second prompt")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(WIDTH, 2), run_before=tiny)
