"""``dsh web``'s running ``bash`` card shows the last lines its command printed under it, one
row each cut to the card's width, masked, escapes dropped; a page opened mid-command shows
them too; they go when the result comes (``running.js``, ``tail`` frames)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.tools.output_tail import LINE_CHARS
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import open_page, send, serve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SECRET = "page-tail-secret-0123456789"
TAIL = "#log .row.tool .tool-tail"
LONG = "W" * 600
SHOWN = ["one", "red", "key [masked LIVETAIL_API_KEY]", LONG[:LINE_CHARS]]


def wait_tail(page: Any, lines: list[str]) -> None:
    page.wait_for_function(
        """([selector, lines]) => JSON.stringify([...document.querySelectorAll(selector + ' > div')]
            .map((d) => d.textContent)) === JSON.stringify(lines)""",
        arg=[TAIL, lines],
    )


def test_a_running_card_shows_its_commands_last_lines_then_its_result(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVETAIL_API_KEY", SECRET)
    env = make_env(tmp_path)
    go = tmp_path / "go"
    command = (
        f"echo one; printf '\\033[31mred\\033[0m\\n'; echo key {SECRET[:8]}''{SECRET[8:]}; "
        f"echo {LONG}; while [ ! -e {go} ]; do sleep 0.02; done; echo went"
    )
    env.script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "the command ended"},
    ]
    with serve(env) as server, open_page(browser) as page, open_page(browser) as joined:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "run the command")
        wait_tail(page, SHOWN)
        row = page.locator(f"{TAIL} > div").nth(3)
        box, card = row.bounding_box(), page.locator("#log .row.tool .tool-card").bounding_box()
        assert box["x"] + box["width"] <= card["x"] + card["width"] + 1  # cut to the card
        assert row.evaluate("(d) => d.scrollWidth > d.clientWidth")  # (its end not shown)
        sid = page.evaluate("() => window.dsh.sessionId")
        joined.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        wait_tail(joined, SHOWN)  # opened mid-command: the lines so far
        go.write_text("")
        page.wait_for_function(
            "(s) => !document.querySelector(s) && document.body.textContent.includes('went')",
            arg=TAIL,
        )
        joined.wait_for_function("(s) => !document.querySelector(s)", arg=TAIL)
        assert SECRET not in page.content() and SECRET not in joined.content()
