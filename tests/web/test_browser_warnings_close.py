"""The warnings list (⚠) closes as the page's other panels do, in a real browser: Esc wherever
the focus is (on the ⚠ button that opened it, in the list, in the composer, where Esc closes the
list before it would stop the running turn) and a click outside it; the focus goes back to the ⚠
button when it was in the list, and stays where it is otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import TOKEN, make_env
from tests.web.pages import open_page, send, serve
from tests.web.test_browser_focus import wait_focus
from tests.web.test_browser_warnings import from_a_thread, stored_session, watching

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

OPEN = "() => !document.getElementById('warnings-panel').hidden"
CLOSED = "() => document.getElementById('warnings-panel').hidden"


def opened(page: Any) -> None:
    page.click("#warnings-toggle")
    page.wait_for_function(OPEN)
    assert page.get_attribute("#warnings-toggle", "aria-expanded") == "true"


def closed(page: Any) -> None:
    page.wait_for_function(CLOSED)
    assert page.get_attribute("#warnings-toggle", "aria-expanded") == "false"


def test_escape_anywhere_and_a_click_outside_close_the_warnings_list(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "a slow reply"}]
    env.delay = 120.0  # the turn runs until it is stopped
    sid = stored_session(env, None)
    with serve(env) as server, open_page(browser) as page:
        watching(page, f"{server.base_url}/?token={TOKEN}#s={sid}")
        from_a_thread("a warning to list")
        page.wait_for_selector("#warnings-toggle:not([hidden])")

        opened(page)  # the focus stays on the ⚠ button: Esc there closes the list
        wait_focus(page, "warnings-toggle")
        page.keyboard.press("Escape")
        closed(page)
        wait_focus(page, "warnings-toggle")

        opened(page)  # Esc in the list: the focus back to the ⚠ button
        page.focus("#warnings-clear")
        page.keyboard.press("Escape")
        closed(page)
        wait_focus(page, "warnings-toggle")

        opened(page)  # a click outside it
        page.click("#conversation", position={"x": 40, "y": 40})
        closed(page)

        send(page, "go slowly")
        page.wait_for_function("() => window.dsh.info?.running === 'turn'")
        opened(page)
        page.focus("#prompt")  # Esc in the composer: the list first, not the turn
        page.keyboard.press("Escape")
        closed(page)
        wait_focus(page, "prompt")
        assert page.evaluate("() => window.dsh.info.running") == "turn"
        page.keyboard.press("Escape")  # nothing else to close: the turn stops
        page.wait_for_function("() => window.dsh.info?.running === null")
