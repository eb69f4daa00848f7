"""ctrl+r in the composer: a search back through the prompt history, as a shell's; ctrl+t
shows the reasoning now that ctrl+r searches."""

from __future__ import annotations

from typing import Any

from dsh.tui.history_search import KEYS_HINT, ReverseSearch
from tests.tui.conftest import Rig
from tests.tui.test_pilot import run

HISTORY = ["make test", "git status", "fix the parser", "make lint", "git log"]


def hint(app: Any) -> str:
    return str(app.query_one("#hint").render())


def title(app: Any) -> str:
    return str(app.prompt_box.border_title or "")


async def typed(pilot: Any, text: str) -> None:
    await pilot.press(*("space" if c == " " else c for c in text))


def test_typing_shows_the_newest_match_and_ctrl_r_the_next_older(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        box.seed(HISTORY)
        box.value = "half a draft"
        await pilot.press("ctrl+r")
        assert box.search is not None and hint(app) == KEYS_HINT
        await typed(pilot, "mak")
        assert box.value == "make lint" and box.selected_text == "mak"
        assert title(app) == "history search: mak▏"
        await pilot.press("ctrl+r")
        assert box.value == "make test"
        await pilot.press("ctrl+r")  # none older: the match stays, the border says so
        assert box.value == "make test" and "(no older match)" in title(app)
        await pilot.press("down")
        assert box.value == "make lint"
        await pilot.press("enter")  # taken into the box, not sent
        assert box.search is None and box.value == "make lint"
        assert app.controller.session is None and title(app) == ""
        assert box.cursor_location == (0, len("make lint"))
        await pilot.press("space", "x")  # typing edits it
        assert box.value == "make lint x"

    run(app, body)


def test_esc_puts_the_draft_back_and_right_takes_the_match(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        box.seed(HISTORY)
        box.value = "half a draft"
        await pilot.press("ctrl+r", "g", "i", "t")
        assert box.value == "git log"
        await pilot.press("escape")
        assert box.search is None and box.value == "half a draft"
        assert hint(app) != KEYS_HINT
        await pilot.press("ctrl+r", "P", "A", "R", "right")  # case-insensitive
        assert box.search is None and box.value == "fix the parser"

    run(app, body)


def test_a_query_nothing_matches_says_so_and_backspace_searches_again(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        box.seed(HISTORY)
        await pilot.press("ctrl+r", "g", "i", "t", "z")
        assert box.value == "git log" and title(app) == "history search: gitz▏ (no match)"
        await pilot.press("backspace", "space", "s")
        assert box.value == "git status"
        await pilot.press("ctrl+c")  # idle: as esc, the draft back
        assert box.search is None and box.value == ""

    run(app, body)


def test_another_key_takes_the_match_and_then_does_its_work(rig: Rig):
    app = rig.app([])

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        box.seed(HISTORY)
        await pilot.press("ctrl+r", "l", "i", "n", "t", "home")
        assert box.search is None and box.value == "make lint"
        assert box.cursor_location == (0, 0)

    run(app, body)


def test_ctrl_t_shows_and_hides_the_reasoning(rig: Rig):
    from tests.tui.conftest import run_prompt
    from tests.tui.test_pilot import lines_of, text_of

    app = rig.app([{"text": "The answer.", "reasoning": "private chain of thought"}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "think")
        await pilot.press("ctrl+t")
        assert "  ┊ private chain of thought" in lines_of(app)
        await pilot.press("ctrl+r")  # the history search, not the reasoning
        assert app.prompt_box.search is not None
        assert "  ┊ private chain of thought" in lines_of(app)
        await pilot.press("escape", "ctrl+t")
        assert "private chain of thought" not in text_of(app)

    run(app, body)


def test_the_search_state():
    search = ReverseSearch(HISTORY, "draft")
    assert search.shown == "draft"
    search.older()  # an empty query: every prompt, newest first
    assert search.shown == "git log"
    search.type("make")
    assert search.shown == "make lint" and search.span("make lint") == (0, 4)
    search.backspace()
    search.backspace()
    search.backspace()
    search.backspace()
    assert search.shown == "draft" and search.query == ""
    assert search.key("x", "x") == "shown" and search.key("ctrl+a", None) == "other"
    assert search.key("enter", None) == "accept" and search.key("escape", None) == "cancel"


def test_a_paste_while_searching_goes_to_the_query(rig: Rig):
    from textual import events

    app = rig.app([])

    async def body(pilot: Any) -> None:
        box = app.prompt_box
        box.seed(HISTORY)
        await pilot.press("ctrl+r")
        app.post_message(events.Paste("the par\nignored"))
        await pilot.pause()
        assert box.value == "fix the parser" and box.search is not None
        assert box.search.query == "the par"

    run(app, body)
