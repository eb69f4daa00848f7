"""The transcript view is virtual: no widget per item, only the rows on screen are drawn, and
a long session is laid out from the end first, the rest measured in the background."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tui import DshApp
from dsh.tui.transcript_layout import SYNC_MEASURE_LIMIT
from dsh.tui.transcript_view import TranscriptView
from tests.helpers import append_chat_turn, append_tool_turn
from tests.tui.conftest import SIZE, Rig, settle

TURNS = 1400


def long_session(store: JsonlStore, cwd: str) -> str:
    rng = random.Random(7)
    session = Session.create(store, cwd=cwd)
    for i in range(TURNS):
        words = " ".join(
            rng.choice(("alpha", "beta", "gamma", "delta")) for _ in range(rng.randint(3, 60))
        )
        if i % 5 == 0:
            append_tool_turn(session, f"prompt {i}: {words}", final=f"reply {i}")
        else:
            append_chat_turn(session, f"prompt {i}", f"reply {i}: {words}")
    session.close()
    return session.id


def screen_rows(view: TranscriptView) -> list[str]:
    return [view.render_line(y).text.rstrip() for y in range(view.scrollable_content_region.height)]


def assert_screen_is_a_slice(view: TranscriptView) -> None:
    full = view.rendered_lines()
    rows = screen_rows(view)
    top = round(view.scroll_y)
    assert rows == (full[top : top + len(rows)] + [""] * len(rows))[: len(rows)]


def test_a_long_session_opens_at_its_end_and_is_measured_in_the_background(rig: Rig):
    session_id = long_session(rig.store, str(rig.workspace))
    app: DshApp = rig.app([], resume=session_id)

    async def main() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)  # a long log: newest page first, then all
            view = app.transcript
            assert len(view.model.blocks) > SYNC_MEASURE_LIMIT
            await pilot.pause()
            assert view.first_paint is not None
            assert len(list(app.query("*"))) < 40  # no widget per item
            rows = screen_rows(view)
            assert f"● reply {TURNS - 1}" in "\n".join(rows)  # opened at the end
            await settle(pilot, lambda: view.unmeasured == 0)
            full = view.rendered_lines()
            assert view.total_height == len(full)
            assert_screen_is_a_slice(view)
            view.focus()
            await pilot.press("home")
            await pilot.pause()
            assert screen_rows(view)[0].startswith("❯ prompt 0:")
            for fraction in (0.25, 0.5, 0.9):
                view.scroll_to(y=int(view.max_scroll_y * fraction), animate=False)
                await pilot.pause()
                assert_screen_is_a_slice(view)

    asyncio.run(main())


async def _no_background_measure(view: TranscriptView) -> None:
    """Stands in for ``TranscriptView._measure_rest``: the estimates stay in place."""


def test_scrolling_into_unmeasured_history_draws_exact_rows(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
):
    session_id = long_session(rig.store, str(rig.workspace))
    app: DshApp = rig.app([], resume=session_id)
    # Cancelling the background measure once the log is open raced it: how many slices it had
    # measured by then depended on the machine's speed. Without it nothing measures the
    # blocks off screen, however fast or loaded the machine is.
    monkeypatch.setattr(TranscriptView, "_measure_rest", _no_background_measure)

    async def main() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)  # a long log: newest page first, then all
            view = app.transcript
            await pilot.pause()
            assert view.unmeasured > 0
            view.scroll_to(y=view.max_scroll_y // 3, animate=False)
            await pilot.pause()
            assert view.unmeasured > 0
            # the blocks above are still estimated, so the rows sit at another y than in the
            # exact layout; they must still be a contiguous run of exact rows
            full, rows = view.rendered_lines(), screen_rows(view)
            starts = [i for i in range(len(full)) if full[i : i + len(rows)] == rows]
            assert starts and rows[0] != rows[1]

    asyncio.run(main())


def test_new_events_follow_the_end_unless_the_reader_scrolled_up_until_a_prompt(rig: Rig):
    session_id = long_session(rig.store, str(rig.workspace))
    app: DshApp = rig.app(
        [{"text": "x"}] * (TURNS + TURNS // 5) + [{"text": "fresh answer"}] * 2, resume=session_id
    )

    async def main() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)  # a long log: newest page first, then all
            view = app.transcript
            await settle(pilot, lambda: view.unmeasured == 0)
            app.prompt_box.value = "next"
            await pilot.press("enter")
            await settle(pilot, lambda: not app.running)
            assert "● fresh answer" in screen_rows(view)
            view.scroll_to(y=10, animate=False)
            await pilot.pause()
            app.note("new output while the reader is up there")
            await pilot.pause()
            assert round(view.scroll_y) == 10
            assert_screen_is_a_slice(view)
            app.prompt_box.value = "again"  # sending brings the view back to the end
            await pilot.press("enter")
            await settle(pilot, lambda: not app.running)
            await pilot.pause()
            assert round(view.scroll_y) == view.max_scroll_y
            assert "● fresh answer" in screen_rows(view)
            assert_screen_is_a_slice(view)

    asyncio.run(main())
