"""A reply's C0 control characters (an escape sequence's ESC, BEL, a lone carriage return) are
dropped when the page draws it, as the terminal UI drops them, rather than drawn as boxes (a
lone CR no line break); tabs and line breaks stay, and a CR LF is one line break
(``static/dom.js`` ``plain``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import make_env
from tests.web.pages import open_page, send, serve, wait_turn_over
from tests.web.test_browser_undo import open_new_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REPLY = "\x1b[31mred\x1b[0m and \x07bell\x1b]0;title\x07\r\nnext\rover\x00 done"
DRAWN = "[31mred[0m and bell]0;title\nnextover done"


def test_a_replys_control_characters_are_not_drawn(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": REPLY, "reasoning": "think\x1b[1m hard\rer"}]
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        send(page, "say \x1b[1mbold\x1b[0m")
        wait_turn_over(page, "nextover")
        row = page.locator("#log .row.assistant").last
        assert row.locator(".body").evaluate("(b) => b.innerText") == DRAWN
        reasoning = row.locator(".reasoning-text").evaluate("(b) => b.textContent")
        assert reasoning == "think[1m harder"
        prompt = page.locator("#log .row.user").last.locator(".body").inner_text()
        assert prompt == "say [1mbold[0m"
