"""The conversation is windowed: after many pages of scroll-back the page holds only the blocks
near the viewport, paging stays anchored, and a parked row comes back when it is needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.builders import long_session
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import (
    ARTIFACTS,
    first_page_loaded,
    open_page,
    same_as_one_pass,
    serve,
    view_rows,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TO_THE_TOP = """() => {
    const c = document.getElementById('conversation');
    c.scrollTop = 0;  // the older page loads on the scroll event, after this returns
    const top = c.getBoundingClientRect().top;
    const row = [...document.querySelectorAll('#log > .block > .row')]
        .find((r) => r.getBoundingClientRect().bottom > top + 1);
    return [+row.dataset.seq, row.getBoundingClientRect().top - top];
}"""

NEAR_THE_TOP = "() => { document.getElementById('conversation').scrollTop = 500; }"

SETTLED = """() => new Promise((done) =>
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 0))))"""


def test_scroll_back_keeps_few_rows_in_the_page_and_the_reading_position(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    sid = long_session(env.store, env.workspace, turns=150)
    with serve(env) as server, open_page(browser, height=700) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        page.wait_for_function("() => !window.dsh.loadingOlder")
        pages = 0
        while page.evaluate("() => window.dsh.hasMore"):
            oldest = page.evaluate("() => window.dsh.oldestSeq")
            # the row at the top stays where it was while the older page lands above it and
            # the blocks far below are parked
            page.evaluate(NEAR_THE_TOP)  # as a person scrolls: the blocks up there come back
            page.evaluate(SETTLED)
            seq, offset = page.evaluate(TO_THE_TOP)
            page.wait_for_function(
                f"() => !window.dsh.loadingOlder && window.dsh.oldestSeq !== {oldest}"
            )
            page.evaluate(SETTLED)
            now = page.evaluate(
                f"""() => {{
                    const row = window.dsh.view.rows.get({seq});
                    const c = document.getElementById('conversation');
                    return row.getBoundingClientRect().top - c.getBoundingClientRect().top;
                }}"""
            )
            assert abs(now - offset) <= 1.5, (pages, seq, offset, now)
            pages += 1
        assert pages >= 6

        counts = page.evaluate(
            "() => [document.querySelectorAll('#log .row').length,"
            " window.dsh.view.order.length, document.querySelectorAll('.block-spacer').length]"
        )
        in_page, in_view, spacers = counts
        assert in_view > 500
        assert spacers > 0 and in_page < in_view / 3, counts
        assert (
            in_page
            + sum(  # every row is in the page or in a parked block
                page.evaluate(
                    "() => window.dsh.view.blocks.list.filter((b) => !b.isConnected)"
                    ".map((b) => b.childElementCount)"
                )
            )
            == in_view
        )

        # the composer still takes keys
        page.focus("#prompt")
        page.keyboard.type("still typing")
        assert page.input_value("#prompt") == "still typing"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "virtual-scrolled-back.png"))

        # back at the end, the newest rows are in the page again, and on screen
        page.evaluate(
            "() => { const c = document.getElementById('conversation');"
            " c.scrollTop = c.scrollHeight; }"
        )
        page.evaluate(SETTLED)
        last = page.locator("#log .row").last
        page.wait_for_function(
            "() => { const rows = window.dsh.view.allRows(); return rows[rows.length - 1]"
            ".isConnected; }"
        )
        assert last.is_visible()
        assert view_rows(page, ".row.assistant")[-1].strip().startswith("Assistant")
        page.screenshot(path=str(ARTIFACTS / "virtual-back-at-the-end.png"))
        # parked or not, the rows are the ones the whole log fed at once makes
        assert same_as_one_pass(page)
