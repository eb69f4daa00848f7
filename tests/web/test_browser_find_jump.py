"""Find's jump in a real browser (``static/paging.js``): a match far back replaces the view
with a window of the log around it (not every page between), which loads earlier and later
pages at its two ends; while the window does not reach the session's end, what the session
logs is kept, not shown, and the view follows the session again once you scroll back down to
its end, or press "Jump to latest"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.surface import Session
from tests.helpers import append_chat_turn
from tests.web.conftest import TOKEN, WebEnv, make_env
from tests.web.pages import first_page_loaded, open_page, serve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TURNS = 400  # 800 messages: 16 pages of 50


def long_chat(env: WebEnv) -> str:
    session = Session(env.store.create(cwd=str(env.workspace)))
    for i in range(TURNS):
        append_chat_turn(session, f"question q{i:04d}x", f"answer a{i:04d}x")
    session.close()
    return session.id


def find(page: Any, query: str) -> None:
    page.keyboard.press("Control+f")
    page.fill("#find-input", query)
    page.press("#find-input", "Enter")
    page.wait_for_function(
        "(q) => { const row = document.querySelector('#log .row.find-current');"
        " return row && row.textContent.includes(q); }",
        arg=query,
    )


def rows_with(page: Any, text: str) -> int:
    count: int = page.evaluate(
        "(text) => window.dsh.view.allRows().filter((r) => r.textContent.includes(text)).length",
        text,
    )
    return count


def scroll_down_to_the_end(page: Any) -> None:
    """Scroll to the bottom as a person would, each later page as it loads, to the end."""
    while page.evaluate("() => window.dsh.hasLater"):
        newest = page.evaluate("() => window.dsh.newestSeq")
        page.evaluate(
            "() => { const c = document.getElementById('conversation');"
            " c.scrollTop = c.scrollHeight; }"
        )
        page.wait_for_function(
            "(newest) => !window.dsh.loadingNewer"
            " && (window.dsh.newestSeq > newest || !window.dsh.hasLater)",
            arg=newest,
        )


def test_find_jumps_to_an_early_match_and_pages_from_the_window(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    sid = long_chat(env)
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        find(page, "q0003x")
        rows = page.evaluate("() => window.dsh.view.order.length")
        assert rows <= 120  # a window around the match, not the 800 messages before it
        assert rows_with(page, "q0399x") == 0  # the newest page is no longer shown
        assert page.evaluate("() => window.dsh.hasLater") is True
        assert page.is_visible("#jump-latest")
        assert page.evaluate("() => CSS.highlights.get('find').size") >= 1
        # earlier pages load at the window's top, later ones at its bottom
        page.evaluate("() => { document.getElementById('conversation').scrollTop = 0; }")
        page.wait_for_function("() => !window.dsh.hasMore && !window.dsh.loadingOlder")
        assert rows_with(page, "q0000x") == 1
        scroll_down_to_the_end(page)
        assert rows_with(page, "q0399x") == 1
        order = page.evaluate("() => window.dsh.view.order")
        assert order == sorted(order) and len(order) == TURNS * 2
        assert page.is_hidden("#jump-latest")


def test_the_view_follows_the_session_again_back_at_its_end(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    sid = long_chat(env)
    writer = Session.open(env.store, sid, writable=True)
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        page.wait_for_function("() => window.dsh.socket && window.dsh.socket.readyState === 1")
        find(page, "q0200x")
        append_chat_turn(writer, "logged while away", "its answer")  # another process writes
        page.wait_for_function(f"() => window.dsh.lastSeq === {len(writer.events) - 1}")
        assert rows_with(page, "logged while away") == 0  # kept, not shown after the window
        assert page.evaluate("() => window.dsh.hasLater") is True

        scroll_down_to_the_end(page)  # back at the end: what was kept follows, in order
        page.wait_for_function("() => !window.dsh.hasLater")
        assert rows_with(page, "logged while away") == 1
        order = page.evaluate("() => window.dsh.view.order")
        assert order == sorted(order) and len(order) == len(set(order))
        append_chat_turn(writer, "logged after", "another answer")  # followed live again
        page.wait_for_function(
            "() => window.dsh.view.allRows().some((r) => r.textContent.includes('logged after'))"
        )

        find(page, "q0100x")  # away again; "Jump to latest" brings the end back
        append_chat_turn(writer, "logged at last", "a last answer")
        page.wait_for_function(f"() => window.dsh.lastSeq === {len(writer.events) - 1}")
        page.click("#jump-latest")
        page.wait_for_function(
            "() => !window.dsh.hasLater"
            " && window.dsh.view.allRows().some((r) => r.textContent.includes('logged at last'))"
        )
        assert rows_with(page, "q0100x") == 0
        assert page.is_hidden("#jump-latest")
        bottom = page.evaluate(
            "() => { const c = document.getElementById('conversation');"
            " return c.scrollHeight - c.scrollTop - c.clientHeight; }"
        )
        assert bottom < 80  # at the end, following
    writer.close()
