"""What a keyboard and a screen reader find on the page, in a real browser (Chromium's own
accessibility tree for roles and names): each message of the transcript begins with a heading
(its author, "Tool: NAME" for a tool card) under the session's title, so heading keys go from
message to message; "Skip to composer" is the first stop of Tab and brings the focus to the
prompt box (or says why there is none, the address left alone); the copy buttons are named by
what they copy, and a copy is said; the prompt box is named "Message", not by its long
placeholder; the context panel is a modal dialog: the focus moves into it, Tab and Shift+Tab
go round its controls, the page behind is inert, Escape or a click beside it closes it and the
focus goes back to its button."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import TOKEN, make_env
from tests.web.pages import open_page, send, serve, wait_turn_over
from tests.web.test_browser import READ_NOTES
from tests.web.test_browser_announcements import ax_node
from tests.web.test_browser_focus import FOCUSED, wait_focus
from tests.web.test_browser_undo import open_new_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HEADINGS = """() => [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')]
    .map((h) => [h.tagName, h.textContent])"""
IN_PANEL = "() => document.getElementById('context-panel').contains(document.activeElement)"
STATE_SAID = "() => document.getElementById('state-announcer').textContent"


def test_each_message_has_a_heading_and_the_copy_buttons_say_what_they_copy(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = list(READ_NOTES)
    with serve(env) as server, open_page(browser) as page:
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        open_new_session(page, server.base_url)
        send(page, "read the notes")
        wait_turn_over(page, "The file has")
        assert page.evaluate(HEADINGS) == [
            ["H1", "read the notes"],
            ["H2", "You"],
            ["H2", "Assistant"],
            ["H2", "Tool: read_file"],
            ["H2", "Assistant"],
        ]
        tool = ax_node(page, "#log .row.tool h2")  # seen by a screen reader only
        assert (tool["role"], tool["name"], tool["level"], tool["ignored"]) == (
            "heading",
            "Tool: read_file",
            2,
            False,
        )
        assert page.locator("#log .row.tool h2").bounding_box()["width"] <= 1  # type: ignore[index]
        author = ax_node(page, "#log .row.user h2")  # the copy button is not part of it
        assert (author["role"], author["name"]) == ("heading", "You")

        names = [
            ax_node(page, selector)["name"]
            for selector in (
                "#log .row.user .copy-message",
                "#log .row.assistant .copy-message",
                "#log .row.assistant .copy-code",
            )
        ]
        assert names == ["Copy message", "Copy message", "Copy code"]
        page.locator("#log .row.assistant pre").last.hover()
        page.locator("#log .row.assistant .copy-code").last.click()
        page.wait_for_function(f"() => ({STATE_SAID})().endsWith('Copied')")
        assert page.evaluate("() => navigator.clipboard.readText()") == "print('fox')"
        assert ax_node(page, "#log .row.assistant .copy-code")["name"] == "Copy code"

        prompt = ax_node(page, "#prompt")
        assert (prompt["role"], prompt["name"]) == ("textbox", "Message")


def test_skip_to_composer_is_the_first_stop_of_tab(browser: Any, tmp_path: Path) -> None:
    with serve(make_env(tmp_path)) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        wait_focus(page, "prompt")  # a fresh page: type at once (Enter starts a session)
        page.evaluate(  # Tab from the page's start (a blur alone would go on from the box)
            "() => { document.body.tabIndex = -1; document.body.focus();"
            " document.body.removeAttribute('tabindex'); }"
        )
        page.keyboard.press("Tab")
        assert page.evaluate(FOCUSED) == "skip-link"
        link = ax_node(page, "#skip-link")
        assert (link["role"], link["name"]) == ("link", "Skip to composer")
        shown = page.locator("#skip-link").bounding_box()
        assert shown is not None and shown["y"] >= 0  # in view once it has the focus
        page.keyboard.press("Enter")  # no session: the box takes the prompt that starts one
        wait_focus(page, "prompt")
        assert page.evaluate("() => location.hash") == ""

        sid = open_new_session(page, server.base_url)
        page.locator("#theme-toggle").focus()
        page.locator("#skip-link").focus()
        page.keyboard.press("Enter")
        wait_focus(page, "prompt")
        assert page.evaluate("() => location.hash") == f"#s={sid}"  # the session stays shown
        assert page.evaluate("() => window.dsh.sessionId") == sid


def test_the_context_panel_is_a_modal_dialog(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = list(READ_NOTES)
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        send(page, "read the notes")
        wait_turn_over(page, "The file has")
        closed = ax_node(page, "#context-panel")
        assert closed["ignored"] is True  # hidden: out of the tree

        page.locator("#context-toggle").focus()
        page.keyboard.press("Enter")
        wait_focus(page, "context-close")
        page.locator("#context-panel .context-items summary").wait_for()
        dialog = ax_node(page, "#context-panel")
        assert (dialog["role"], dialog["name"], dialog["modal"]) == (
            "dialog",
            "Context: what the model sees next",
            True,
        )
        assert page.evaluate("() => document.getElementById('composer').inert") is True
        visited = []
        for key in ["Tab"] * 4 + ["Shift+Tab"] * 5:
            page.keyboard.press(key)
            assert page.evaluate(IN_PANEL), key
            visited.append(page.evaluate("() => document.activeElement.textContent"))
        tools = visited[0]  # round its two controls: ✕ and the tools' disclosure
        assert tools.startswith("Tools (")
        assert visited == [tools, "✕", tools, "✕", tools, "✕", tools, "✕", tools]
        page.keyboard.press("Escape")
        assert page.is_hidden("#context-panel")
        assert page.evaluate(FOCUSED) == "context-toggle"
        assert page.evaluate("() => document.getElementById('composer').inert") is False

        page.click("#context-toggle")
        wait_focus(page, "context-close")
        page.mouse.click(100, 400)  # beside the panel: on the backdrop
        assert page.is_hidden("#context-panel") and page.is_hidden("#modal-backdrop")
        assert page.evaluate(FOCUSED) == "context-toggle"
        page.keyboard.press("Control+f")  # the page's own shortcuts work again
        wait_focus(page, "find-input")
