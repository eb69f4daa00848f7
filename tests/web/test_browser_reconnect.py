"""A page whose ``dsh web`` stops and starts again (same port, same token), in a real browser:
while the server is gone the page says it is disconnected and reconnecting, and what cannot
work without it is off (Send, Stop, "New session", the approval's answers); once its streams are
back the bar goes, and the approval card of the turn the stop cancelled goes with it (the
``hello`` lists no approval), the turn's end shown in the conversation
(``static/connection.js``, ``approvals.js`` ``syncApprovals``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.web import BackgroundServer
from tests.web.pages import ARTIFACTS, send
from tests.web.test_approval_mode_api import ask_env
from tests.web.test_browser_undo import open_new_session, wait_for_row

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ONCE = "#approvals .approval button[data-answer='once']"


def test_a_restart_says_the_page_is_disconnected_and_drops_the_dead_turns_approval(
    browser: Any, tmp_path: Path
) -> None:
    env = ask_env(tmp_path, "echo never run")
    first = BackgroundServer(env.app()).start()
    # a refused WebSocket handshake logs a console error while the server is down: expected
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    second = None
    try:
        open_new_session(page, first.base_url)
        page.wait_for_function("() => window.dsh.warnings.socket?.readyState === 1")
        send(page, "run it")
        page.wait_for_selector(ONCE)
        assert page.is_hidden("#connection")
        assert page.is_enabled(ONCE) and page.is_enabled("#cancel")

        first.stop()
        page.wait_for_selector("#connection", state="visible")
        assert page.inner_text("#connection") == "Disconnected from dsh web: reconnecting…"
        assert page.evaluate("() => document.body.dataset.connection") == "lost"
        for off in (ONCE, "#cancel", "#send", "#new-session"):
            assert page.is_disabled(off), off
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "disconnected-1280.png"))
        page.fill("#prompt", "typed while it was gone")
        page.press("#prompt", "Enter")  # nothing to send it to: the draft stays
        page.wait_for_function(
            "() => document.getElementById('toast').textContent.startsWith('Not sent: the page is')"
        )
        assert page.input_value("#prompt") == "typed while it was gone"

        second = BackgroundServer(env.app(), port=first.port).start()
        page.wait_for_selector("#connection", state="hidden")
        page.wait_for_function(
            "() => document.querySelectorAll('#approvals .approval').length === 0"
        )
        wait_for_row(page, ".row", "cancelled because dsh web stopped")
        assert page.evaluate("() => document.body.dataset.connection") == "up"
        assert page.is_enabled("#send") and page.is_enabled("#new-session")
        assert page.evaluate("() => window.dsh.info.running") is None
    finally:
        if second is not None:
            second.stop()
        first.stop()
        context.close()
    assert errors == []
