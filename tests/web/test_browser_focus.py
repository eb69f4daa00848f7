"""Where the keyboard focus goes, and what the header's icon buttons are called, in a real
browser (Chromium's own accessibility tree for the names): an approval answered from the
keyboard hands the focus to the composer instead of dropping it to the page's start; the find
bar, the context panel and the warnings list, closed with Esc or their ✕, give it back where
it was when they opened; ☰ and ⚠ have names a screen reader can say (⚠'s with its count and
whether new ones are unseen), and a tool card's is its call without the ▸ drawn before it; the
context panel's figures have column and row headers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import TOKEN, make_env
from tests.web.pages import open_page, send, serve, wait_turn_over
from tests.web.test_browser import READ_NOTES
from tests.web.test_browser_announcements import ax_node
from tests.web.test_browser_undo import open_new_session
from tests.web.test_browser_warnings import from_a_thread, watching

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FOCUSED = "() => document.activeElement && document.activeElement.id"


def wait_focus(page: Any, element_id: str) -> None:
    page.wait_for_function(
        "(id) => document.activeElement && document.activeElement.id === id", arg=element_id
    )


def test_an_approval_answered_from_the_keyboard_hands_the_focus_to_the_composer(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo asked"}}]},
        {"text": "ran it"},
    ]
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        send(page, "run the command")
        page.locator("#approvals .approval").wait_for()
        page.locator("#prompt").focus()
        page.keyboard.press("Shift+Tab")  # the approval's last control is one step back
        assert page.evaluate("() => document.activeElement.dataset.action") == "reason"
        page.keyboard.press("Shift+Tab")
        assert page.evaluate("() => document.activeElement.dataset.answer") == "deny"
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Shift+Tab")
        assert page.evaluate("() => document.activeElement.dataset.answer") == "once"
        page.keyboard.press("Enter")
        wait_turn_over(page, "ran it")
        assert page.locator("#approvals .approval").count() == 0
        assert page.evaluate(FOCUSED) == "prompt"


def test_find_context_and_warnings_give_the_focus_back_when_closed(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = list(READ_NOTES)
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        send(page, "read the notes")
        wait_turn_over(page, "The file has")

        # the find bar, opened from the composer with Ctrl+F: Esc, then its ✕
        for close in ("Escape", "#find-close"):
            page.locator("#prompt").focus()
            page.keyboard.press("Control+f")
            wait_focus(page, "find-input")
            if close == "Escape":
                page.keyboard.press("Escape")
            else:
                page.click(close)
            assert page.is_hidden("#find-bar")
            assert page.evaluate(FOCUSED) == "prompt"

        # the context panel, opened by its button from the keyboard: Esc anywhere in it
        page.locator("#context-toggle").focus()
        page.keyboard.press("Enter")
        wait_focus(page, "context-close")
        page.locator("#context-panel .context-parts tbody tr[data-part='tail']").wait_for()
        page.keyboard.press("Escape")
        assert page.is_hidden("#context-panel")
        assert page.evaluate(FOCUSED) == "context-toggle"
        assert page.get_attribute("#context-toggle", "aria-expanded") == "false"

        # the warnings list
        from_a_thread("dsh.tools.mcp: a warning before the page came")
        page.reload()
        watching(page, None)
        page.wait_for_selector("#warnings-toggle.unread")
        toggle = ax_node(page, "#warnings-toggle")
        assert toggle["name"] == "Warnings and errors: 1, new ones unseen"
        page.locator("#warnings-toggle").focus()
        page.keyboard.press("Enter")
        page.locator("#warnings-panel").wait_for()
        assert ax_node(page, "#warnings-toggle")["name"] == "Warnings and errors: 1"
        page.keyboard.press("Tab")  # into the list: its Clear
        assert page.evaluate(FOCUSED) == "warnings-clear"
        page.keyboard.press("Escape")
        assert page.is_hidden("#warnings-panel")
        assert page.evaluate(FOCUSED) == "warnings-toggle"


def test_icon_buttons_and_tool_cards_have_names_and_the_context_figures_headers(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = list(READ_NOTES)
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        toggle = ax_node(page, "#sidebar-toggle")
        assert (toggle["role"], toggle["name"], toggle["expanded"]) == (
            "button",
            "Session list",
            True,
        )
        open_new_session(page, server.base_url)
        send(page, "read the notes")
        wait_turn_over(page, "The file has")
        card = ax_node(page, "#log .tool-card > summary")  # its ▸ is drawn, not read out
        assert (card["role"], card["name"], card["expanded"]) == (
            "DisclosureTriangle",
            "read_file notes.txt done",
            False,
        )
        page.click("#context-toggle")
        page.locator("#context-panel .context-parts tbody tr[data-part='tail']").wait_for()
        table = page.locator("#context-panel .context-parts").aria_snapshot()
        assert table.startswith(
            "- table:\n"
            '  - rowgroup:\n    - row "Part Items Tokens Share":\n'
            '      - columnheader "Part"\n      - columnheader "Items"\n'
            '      - columnheader "Tokens"\n      - columnheader "Share"\n'
        ), table
        assert '- rowheader "System prompt"' in table and '- rowheader "Tail (verbatim)"' in table
