"""Find highlights the row where the match begins when wrapping splits it over two rows (at a
space, or inside a long word cut in two) or Markdown rendering changed it; it used to
highlight the block's first row, which may be far from the match."""

from __future__ import annotations

from typing import Any

import pytest
from rich.segment import Segment

from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tui.blocks import row_text
from dsh.tui.find import FindBar
from dsh.tui.found_row import first_row_with
from dsh.tui.transcript_view import TranscriptView
from tests.helpers import append_chat_turn
from tests.tui.conftest import Rig
from tests.tui.test_find import highlighted, run, type_needle

INTRO = "an opening line\nand a second one"


def last_block_rows(view: TranscriptView) -> list[str]:
    """The rows of the newest block without their two-cell mark, and without its blank row."""
    rows = view.rows_of(len(view.model.blocks) - 1)
    return [row_text(row)[2:] for row in rows[:-1]]


async def find_split(pilot: Any, view: TranscriptView, text: str, *, words: bool) -> None:
    """Add a note of ``text``, find a needle that its rows 4 and 5 split, and check that row 4
    is the one highlighted."""
    view.add_note(text)
    await pilot.pause()
    rows = last_block_rows(view)
    assert len(rows) > 6 and rows[:2] == INTRO.split("\n")
    # the last word of row 4 and the first of row 5 as written, or the end of row 4 and the
    # start of row 5: one word, cut
    needle = f"{rows[4].split()[-1]} {rows[5].split()[0]}" if words else rows[4][-4:] + rows[5][:4]
    assert text.count(needle) == 1 and not any(needle in row for row in rows)
    await pilot.press("ctrl+f")
    await type_needle(pilot, needle)
    assert view.found is not None and view.found[0] == len(view.model.blocks) - 1
    assert view.found[1] == 4, highlighted(view)


@pytest.mark.parametrize("words", [True, False], ids=["at-a-space", "inside-a-long-word"])
def test_a_match_wrapping_splits_is_highlighted_on_the_row_where_it_begins(
    rig: Rig, words: bool
) -> None:
    if words:
        text = INTRO + "\n" + " ".join(f"word{n:03d}" for n in range(120))
    else:
        text = INTRO + "\n" + "".join(f"{chr(97 + n % 26)}{n:03d}" for n in range(200))
    app = rig.app([])

    async def body(pilot: Any, view: TranscriptView, bar: FindBar) -> None:
        await find_split(pilot, view, text, words=words)

    run(app, body)


def markdown_session(store: JsonlStore, cwd: str) -> str:
    session = Session.create(store, cwd=cwd)
    reply = (
        "# Plan\n\nFirst we read the notes.\n\n- open the file\n- then edit `the config` "
        "with **great care**\n- and run [the tests](https://example.com/tests)\n"
    )
    append_chat_turn(session, "what is the plan?", reply)
    session.close()
    return session.id


@pytest.mark.parametrize(
    ("needle", "row_holds"),
    [
        ("edit `the config` with **great care**", "then edit the config"),
        ("[the tests](https", "and run the tests"),
    ],
)
def test_a_match_markdown_markup_splits_is_highlighted_on_the_row_that_shows_it(
    rig: Rig, needle: str, row_holds: str
) -> None:
    app = rig.app([], resume=markdown_session(rig.store, str(rig.workspace)))

    async def body(pilot: Any, view: TranscriptView, bar: FindBar) -> None:
        await pilot.press("ctrl+f")
        await type_needle(pilot, needle)
        assert view.found is not None and view.found[1] > 0
        assert row_holds in highlighted(view)

    run(app, body)


def rows(*texts: str) -> list[list[Segment]]:
    return [[Segment("  ┊ "), Segment(text)] for text in texts]


def test_the_row_is_found_by_ever_looser_comparisons_and_is_the_first_row_failing_all() -> None:
    shown = rows("the start", "of a thought that", "wraps here", "Tom and Jerry & friends")
    assert first_row_with(shown, "thought that wraps") == 1  # the bar between: letters only
    assert first_row_with(shown, "WRAPS HERE") == 2
    # rendered Markdown shows "&amp;" as "&": the needle's start is found, as written
    assert first_row_with(shown, "Tom and Jerry &amp; friends") == 3
    assert first_row_with(shown, "nowhere at all") == 0
    assert first_row_with(shown, "--") == 0
    assert first_row_with(shown, "") == 0
