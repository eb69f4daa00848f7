"""A filtered picker's title (what it does, which keys) shows whole, wrapped to its width."""

from __future__ import annotations

from typing import Any

import pytest

from dsh.tui.rewind import TurnPicker
from tests.tui.conftest import Rig, run_prompt, settle, submit
from tests.tui.test_pilot import run

SCRIPT = [{"text": "answer one"}]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_the_rewind_pickers_title_shows_whole_esc_closes_included(
    rig: Rig, size: tuple[int, int]
) -> None:
    # It was cut to one row: "… the prompt in the" at 120 columns, "esc closes" lost.
    app = rig.app(SCRIPT)

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "first prompt")
        await submit(pilot, "/rewind")
        await settle(pilot, lambda: isinstance(app.screen, TurnPicker))
        await pilot.pause()
        shown = " ".join(strip.text for strip in app.screen._compositor.render_strips())
        words = " ".join("".join(c if c.isascii() else " " for c in shown).split())
        assert "(this session stays as it is); esc closes" in words
        assert "Type to filter." in words and "first prompt" in words  # the rest still shows

    run(app, body, size)
