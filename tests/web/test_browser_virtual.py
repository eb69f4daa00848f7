"""The conversation is windowed: after many pages of scroll-back the page holds only the blocks
near the viewport, paging stays anchored, and a parked row comes back when it is needed."""

from __future__ import annotations

import itertools
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
    scroll_to_beginning,
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

TOP_BLOCK_BACK = """() => {
    const first = document.getElementById('log').firstElementChild;
    return !!first && first.className === 'block' && !!first.querySelector('.row');
}"""
"""The first block is in the page again (the intersection observer's callback has run: on a
loaded machine that can take longer than a couple of frames)."""


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
            page.wait_for_function(TOP_BLOCK_BACK)
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

        # the blocks far from the viewport get parked (the observer's callback may come late)
        page.wait_for_function(
            "() => document.querySelectorAll('.block-spacer').length > 0"
            " && document.querySelectorAll('#log .row').length * 3"
            " < window.dsh.view.order.length"
        )
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


NO_SPACER_IN_VIEW = """() => {
    const c = document.getElementById('conversation');
    const view = c.getBoundingClientRect();
    const x = view.left + view.width / 2;
    const ys = [view.top + 2, (view.top + view.bottom) / 2, view.bottom - 2];
    return ys.every((y) => {
        const hit = document.elementFromPoint(x, y);
        return !!hit && !hit.closest('.block-spacer');
    }) && [...document.querySelectorAll('#log > .block > .row')].some((r) => {
        const b = r.getBoundingClientRect();
        return b.bottom > view.top && b.top < view.bottom;
    });
}"""
"""The view shows rows: no parked run's spacer at its top, middle or bottom, and a row in it."""

WINDOW = """() => {
    const c = document.getElementById('conversation');
    const view = c.getBoundingClientRect();
    const log = [...document.getElementById('log').children];
    const onScreen = (r) => {
        const b = r.getBoundingClientRect();
        return b.bottom > view.top && b.top < view.bottom;
    };
    const shown = [...document.querySelectorAll('#log > .block > .row')]
        .filter(onScreen).map((r) => +r.dataset.seq);
    return {
        kinds: log.map((e) => e.className),
        parked: window.dsh.view.blocks.list.filter((b) => !b.isConnected).length,
        shown,
        scrollTop: c.scrollTop,
    };
}"""


def test_parked_blocks_share_a_spacer_and_a_jump_brings_back_the_rows_there(
    browser: Any, tmp_path: Path
) -> None:
    """Consecutive parked blocks stand behind one spacer (the page, and what the intersection
    observer watches, stays a few elements however long the scroll-back), and a jump into the
    middle of a run brings back the rows there without moving the scroll position."""
    env = make_env(tmp_path)
    sid = long_session(env.store, env.workspace, turns=150)
    with serve(env) as server, open_page(browser, height=700) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        scroll_to_beginning(page)
        page.evaluate(SETTLED)
        for where in (0.5, 0.2, 0.8, 1.0, 0.0, 0.5):
            target = page.evaluate(
                f"""() => {{
                    const c = document.getElementById('conversation');
                    c.scrollTop = Math.round((c.scrollHeight - c.clientHeight) * {where});
                    return c.scrollTop;
                }}"""
            )
            # the rows at the new position come back (the observer reports after a frame, or
            # much later on a loaded machine): no spacer left in the view
            page.wait_for_function(NO_SPACER_IN_VIEW)
            # and the blocks away from it are parked again, a run behind one spacer
            page.wait_for_function("() => document.getElementById('log').children.length <= 6")
            page.evaluate(SETTLED)
            window = page.evaluate(WINDOW)
            kinds = window["kinds"]
            assert window["parked"] > 0, (where, kinds)
            # no two spacers side by side: a run of parked blocks has one spacer
            spacers = [i for i, kind in enumerate(kinds) if kind == "block-spacer"]
            assert all(b - a > 1 for a, b in itertools.pairwise(spacers)), kinds
            assert len(spacers) <= 2 and len(kinds) <= 6, (where, kinds)
            # the rows on screen are consecutive rows of the conversation, and nothing moved
            order = page.evaluate("() => window.dsh.view.order")
            first = order.index(window["shown"][0])
            assert order[first : first + len(window["shown"])] == window["shown"]
            assert abs(window["scrollTop"] - target) <= 1, (where, window["scrollTop"], target)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "virtual-jump-to-the-middle.png"))
        assert same_as_one_pass(page)
