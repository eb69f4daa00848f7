"""The transcript view is virtual: no widget per item, only the rows on screen are drawn, and
a long session is laid out from the end first, its other blocks measured only as they come
near the screen, or a slice at a time after it is shown (``dsh.tui.transcript_layout``)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tui import DshApp
from dsh.tui.blocks import block_rows
from dsh.tui.transcript_layout import BACKGROUND_MEASURE_LIMIT, SYNC_MEASURE_LIMIT
from dsh.tui.transcript_view import TranscriptView
from tests.helpers import append_chat_turn, append_tool_turn
from tests.tui.conftest import SIZE, Rig, settle

TURNS = 1400
MID_TURNS = 300
"""A transcript with more estimated blocks than are measured at once, fewer than are all
measured a slice at a time."""


def reply_text(i: int, words: str, rng: random.Random) -> str:
    """Prose, or Markdown with a code block, whose height the estimate gets wrong."""
    if i % 7 != 3:
        return f"reply {i}: {words}"
    code = "\n".join(f"value_{n} = compute({n}, '{words[:20]}')" for n in range(rng.randint(1, 9)))
    return f"reply {i}:\n\n```python\n{code}\n```\n\n- {words}"


def long_session(store: JsonlStore, cwd: str, *, tools_every: int = 5, turns: int = TURNS) -> str:
    rng = random.Random(7)
    session = Session.create(store, cwd=cwd)
    for i in range(turns):
        words = " ".join(
            rng.choice(("alpha", "beta", "gamma", "delta")) for _ in range(rng.randint(3, 60))
        )
        if i % tools_every == 0:  # an assistant message of tool calls only: no rows, estimated 4
            append_tool_turn(session, f"prompt {i}: {words}", final=f"reply {i}")
        else:
            append_chat_turn(session, f"prompt {i}", reply_text(i, words, rng))
    session.close()
    return session.id


def screen_rows(view: TranscriptView) -> list[str]:
    return [view.render_line(y).text.rstrip() for y in range(view.scrollable_content_region.height)]


class MeasuredLayout:
    """The transcript with every block measured, at the view's width: what the screen must
    show from the same anchor, estimates or not."""

    def __init__(self) -> None:
        self._by_width: dict[int, tuple[list[str], list[int]]] = {}

    def rows_and_offsets(self, view: TranscriptView) -> tuple[list[str], list[int]]:
        width = view.scrollable_content_region.width
        if width not in self._by_width:
            offsets = [0]
            for block in view.model.blocks:
                rows = block_rows(
                    block, width, show_reasoning=view.show_reasoning, details=view.details
                )
                offsets.append(offsets[-1] + len(rows))
            self._by_width[width] = (view.rendered_lines(), offsets)
        return self._by_width[width]

    def screen(self, view: TranscriptView) -> list[str]:
        rows, offsets = self.rows_and_offsets(view)
        anchor = view.screen_anchor()
        assert anchor is not None
        index, above = anchor
        top = offsets[index] + above
        height = view.scrollable_content_region.height
        return (rows[top : top + height] + [""] * height)[:height]


def assert_drawn_as_measured(view: TranscriptView, measured: MeasuredLayout, how: str) -> None:
    unselected = [" " + row[1:] if row.startswith("▌") else row for row in screen_rows(view)]
    assert unselected == measured.screen(view), how
    assert view.virtual_size.height == view.total_height, how


def test_a_long_session_opens_at_its_end_and_measures_only_what_comes_near_the_screen(rig: Rig):
    session_id = long_session(rig.store, str(rig.workspace))
    app: DshApp = rig.app([], resume=session_id)

    async def main() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)  # a long log: newest page first, then all
            view = app.transcript
            assert len(view.model.blocks) > BACKGROUND_MEASURE_LIMIT
            await pilot.pause()
            assert view.first_paint is not None
            assert len(list(app.query("*"))) < 40  # no widget per item
            rows = screen_rows(view)
            assert f"● reply {TURNS - 1}" in "\n".join(rows)  # opened at the end
            assert round(view.scroll_y) == view.max_scroll_y
            messages = sum(b.kind in ("user", "assistant") for b in view.model.blocks)
            near_screen = 3 * view.scrollable_content_region.height  # rows measured around it
            assert 0 < messages - view.unmeasured <= 2 * near_screen
            measured = MeasuredLayout()
            assert screen_rows(view) == measured.rows_and_offsets(view)[0][-len(rows) :]
            view.scroll_by_key("home")  # as the prompt's home key does, without animation
            await pilot.pause()
            assert screen_rows(view)[0].startswith("❯ prompt 0:")
            assert_drawn_as_measured(view, measured, "home")
            assert messages - view.unmeasured <= 4 * near_screen  # the middle is not measured

    asyncio.run(main())


def test_a_mid_sized_transcript_is_measured_whole_a_slice_at_a_time_the_text_staying_put(
    rig: Rig,
):
    """Its estimated blocks are measured after it is laid out, not at once (that held the event
    loop for half a second at ~1,200 Markdown replies): the screen's text does not move
    meanwhile, and in the end every block is measured."""
    session_id = long_session(rig.store, str(rig.workspace), turns=MID_TURNS)
    app: DshApp = rig.app([], resume=session_id)

    async def main() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            view = app.transcript
            await settle(pilot, lambda: app.ready and not view.measuring)
            messages = sum(b.kind in ("user", "assistant") for b in view.model.blocks)
            assert SYNC_MEASURE_LIMIT < messages <= BACKGROUND_MEASURE_LIMIT
            assert view.unmeasured == 0  # measured whole once opened
            view.scroll_to(y=view.max_scroll_y // 3, animate=False)
            await pilot.pause()
            rows = screen_rows(view)

            view.set_show_reasoning(True)  # every block estimated again, as at an open

            assert view.measuring and view.unmeasured > SYNC_MEASURE_LIMIT  # not at once
            assert screen_rows(view) == rows
            await settle(pilot, lambda: not view.measuring)
            assert view.unmeasured == 0
            assert screen_rows(view) == rows
            assert_drawn_as_measured(view, MeasuredLayout(), "measured whole")

    asyncio.run(main())


def test_a_relayout_while_measuring_a_slice_at_a_time_starts_over_and_ends_measured(rig: Rig):
    session_id = long_session(rig.store, str(rig.workspace), turns=MID_TURNS)
    app: DshApp = rig.app([], resume=session_id)

    async def main() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            view = app.transcript
            await settle(pilot, lambda: app.ready and not view.measuring)
            view.set_show_reasoning(True)
            view.set_show_reasoning(False)  # laid out again before a slice of the first ran
            assert view.measuring and view.unmeasured > SYNC_MEASURE_LIMIT
            await settle(pilot, lambda: not view.measuring)
            assert view.unmeasured == 0
            assert round(view.scroll_y) == view.max_scroll_y  # it still follows the end
            assert_drawn_as_measured(view, MeasuredLayout(), "laid out twice")

    asyncio.run(main())


async def resized(pilot: Any, app: DshApp, width: int, height: int) -> None:
    await pilot.resize_terminal(width, height)
    await settle(pilot, lambda: tuple(app.size) == (width, height))
    await pilot.pause()


def test_wherever_the_view_goes_it_draws_the_rows_of_the_fully_measured_layout(rig: Rig):
    """Random scrolls, jumps, keys and resizes over estimated history: the rows drawn are the
    measured layout's from the same anchor, and the scroll extent is the sum of the heights."""
    session_id = long_session(rig.store, str(rig.workspace))
    app: DshApp = rig.app([], resume=session_id)
    rng = random.Random(11)

    async def main() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            view = app.transcript
            measured, done = MeasuredLayout(), []
            for _ in range(40):
                op = rng.choice(("to", "to", "wheel", "key", "height", "width"))
                if op == "to":
                    view.scroll_to(y=int(view.max_scroll_y * rng.random()), animate=False)
                    done.append(f"to {round(view.scroll_y)}")
                elif op == "wheel":
                    rows = rng.choice((-3, -1, 1, 3))
                    view.scroll_relative(y=rows, animate=False)
                    done.append(f"wheel {rows}")
                elif op == "key":
                    where = rng.choice(("page_up", "page_down", "home", "end"))
                    view.scroll_by_key(where)
                    done.append(where)
                elif op == "height":
                    height = rng.choice((12, 32, 70))
                    await resized(pilot, app, app.size.width, height)
                    done.append(f"height {height}")
                else:
                    width = rng.choice((60, 100, 140))
                    await resized(pilot, app, width, app.size.height)
                    done.append(f"width {width}")
                await pilot.pause()
                assert_drawn_as_measured(view, measured, " / ".join(done))
                if done[-1] == "end":
                    assert round(view.scroll_y) == view.max_scroll_y
            assert view.unmeasured > 0  # the test ran over estimated history

    asyncio.run(main())


def test_scrolling_up_a_row_at_a_time_moves_the_text_one_row_while_estimates_are_replaced(
    rig: Rig,
):
    session_id = long_session(rig.store, str(rig.workspace))
    app: DshApp = rig.app([], resume=session_id)

    async def main() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            view = app.transcript
            measured = MeasuredLayout()
            view.scroll_to(y=view.max_scroll_y // 2, animate=False)
            await pilot.pause()
            before, rows = view.unmeasured, screen_rows(view)
            for step in range(4 * view.scrollable_content_region.height):
                view.scroll_relative(y=-1, animate=False)
                await pilot.pause()
                now = screen_rows(view)
                assert now[1:] == rows[:-1], f"step {step}"
                assert_drawn_as_measured(view, measured, f"step {step}")
                rows = now
            assert view.unmeasured < before  # estimates above the screen were replaced

    asyncio.run(main())


def test_selecting_a_card_screens_away_shows_all_of_it(rig: Rig):
    """Cards a few screens apart: the next one was estimated elsewhere than it measures."""
    session_id = long_session(rig.store, str(rig.workspace), tools_every=40)
    app: DshApp = rig.app([], resume=session_id)

    async def main() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            view = app.transcript
            measured = MeasuredLayout()
            view.focus()
            view.scroll_to(y=view.max_scroll_y // 2, animate=False)
            await pilot.pause()
            for key in ["down"] * 8 + ["up"] * 8:
                await pilot.press(key)
                await pilot.pause()
                assert view.selected is not None
                card = f"{key} to block {view.selected}"
                offsets = measured.rows_and_offsets(view)[1]
                index, above = view.screen_anchor() or (0, 0)
                top = offsets[index] + above
                first, end = offsets[view.selected], offsets[view.selected + 1]
                assert top <= first and end <= top + view.scrollable_content_region.height, card
                assert_drawn_as_measured(view, measured, card)

    asyncio.run(main())


def test_a_find_far_into_estimated_history_shows_the_match_a_third_down_the_screen(rig: Rig):
    session_id = long_session(rig.store, str(rig.workspace))
    app: DshApp = rig.app([], resume=session_id)

    async def main() -> Any:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            view = app.transcript
            await pilot.press("ctrl+f")
            for key in "prompt 701":
                await pilot.press(key)
            await settle(pilot, lambda: view.found is not None)
            await pilot.pause()
            assert view.found is not None
            index, row = view.found
            measured = MeasuredLayout()
            rows, offsets = measured.rows_and_offsets(view)
            anchor = view.screen_anchor()
            assert anchor is not None
            on_screen = offsets[index] + row - (offsets[anchor[0]] + anchor[1])
            assert on_screen == view.size.height // 3
            assert rows[offsets[index] + row] == "❯ prompt 701"
            assert_drawn_as_measured(view, measured, "found")
            assert view.unmeasured > 0  # it was found and shown among estimates

    asyncio.run(main())


def test_a_terminal_grown_many_times_taller_draws_only_measured_rows(rig: Rig):
    session_id = long_session(rig.store, str(rig.workspace))
    app: DshApp = rig.app([], resume=session_id)

    async def main() -> Any:
        async with app.run_test(size=(SIZE[0], 14)) as pilot:
            await settle(pilot, lambda: app.ready)
            view = app.transcript
            view.scroll_to(y=view.max_scroll_y // 3, animate=False)
            await pilot.pause()
            await resized(pilot, app, SIZE[0], 90)
            assert view.scrollable_content_region.height > 6 * 14
            assert_drawn_as_measured(view, MeasuredLayout(), "grown")

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
            app.prompt_box.value = "next"
            await pilot.press("enter")
            await settle(pilot, lambda: not app.running)
            assert "● fresh answer" in screen_rows(view)
            view.scroll_to(y=10, animate=False)
            await pilot.pause()
            reading, anchor = round(view.scroll_y), view.screen_anchor()
            app.note("new output while the reader is up there")
            await pilot.pause()
            assert round(view.scroll_y) == reading and view.screen_anchor() == anchor
            assert_drawn_as_measured(view, MeasuredLayout(), "up there")
            app.prompt_box.value = "again"  # sending brings the view back to the end
            await pilot.press("enter")
            await settle(pilot, lambda: not app.running)
            await pilot.pause()
            assert round(view.scroll_y) == view.max_scroll_y
            assert "● fresh answer" in screen_rows(view)
            assert_drawn_as_measured(view, MeasuredLayout(), "at the end")

    asyncio.run(main())
