"""A session reopened in the page by a server started with another window (``dsh web
--context-window``) shows the window its next turn runs in at once, in a real browser: the
header's context use and the context panel measure against it before that turn logs it, the
session read from the store as well as resumed (``dsh.web.next_route``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from dsh.agent.runtime import Route
from dsh.config import ProviderSettings
from dsh.web import BackgroundServer, WebRuntime
from tests.web.conftest import TOKEN
from tests.web.pages import first_page_loaded, open_page, send, wait_turn_over
from tests.web.test_session_settings_web import session_after_one_read

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def panel_window(page: Any) -> str:
    """The context panel's line of the next request's size against its window."""
    page.click("#context-toggle")
    total = page.locator("#context-body .context-total")
    total.wait_for()
    text = str(total.inner_text())
    page.keyboard.press("Escape")
    return text


def test_the_page_shows_the_flags_window_before_the_next_turn(browser: Any, tmp_path: Path) -> None:
    env, sid = session_after_one_read(tmp_path)  # recorded in a 16,000-token window
    env.script = [*env.script[:2], {"text": "in the wider window"}]  # its third model call
    flags = {"provider": {"context_window": 32_000}}
    today = msgspec.structs.replace(env.settings, provider=ProviderSettings(context_window=32_000))
    runtime = WebRuntime(today, Route(env.provider(), "scripted", 32_000), overrides=flags)
    server = BackgroundServer(env.app(runtime)).start()
    try:
        with open_page(browser) as page:
            page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
            first_page_loaded(page)
            header = page.locator("#context-use")
            assert " / 32.0k (" in header.inner_text()  # read from the store, not resumed
            assert " of 32.0k tokens " in panel_window(page)
            send(page, "once more")  # resumes it, then runs the turn
            wait_turn_over(page, "in the wider window")
            page.wait_for_function(
                "() => document.getElementById('context-use').textContent.includes(' / 32.0k (')"
            )
            assert " of 32.0k tokens " in panel_window(page)
    finally:
        server.stop()
