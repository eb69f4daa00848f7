"""The page composer's prompt history and the other face: the history file is read again when a
walk starts (and when the page comes back), so a prompt the terminal UI sent meanwhile is what Up
shows first; a draft queued is remembered only once it is sent (one taken back never is); and Up
and Down with the Tab completion list open move in the list, not in the history
(``static/prompt_recall.js``, ``static/completion.js``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.config import dsh_home
from dsh.config.prompt_history import PromptHistory
from tests.web.conftest import make_env, wait_until
from tests.web.pages import open_page, send, serve, wait_turn_over
from tests.web.test_approval_mode_api import bash_script
from tests.web.test_browser_undo import open_new_session
from tests.web.test_prompt_history_web import on_file, press

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ONCE = "#approvals .approval button[data-answer='once']"


def test_up_shows_what_the_terminal_ui_sent_since_the_page_loaded(
    browser: Any, tmp_path: Path
) -> None:
    PromptHistory(dsh_home()).append("an old prompt")
    env = make_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        page.wait_for_function("() => window.dsh.composer.recall.prompts.length === 1")
        PromptHistory(dsh_home()).append("sent from the terminal")  # as the TUI appends it
        press(page, "ArrowUp", "sent from the terminal")
        press(page, "ArrowUp", "an old prompt")
        press(page, "ArrowDown", "sent from the terminal")
        press(page, "ArrowDown", "")  # the draft (empty) back
        # the page coming back (its window focused) reads it again too
        PromptHistory(dsh_home()).append("sent while the page was away")
        page.evaluate("() => window.dispatchEvent(new Event('focus'))")
        page.wait_for_function(
            "() => window.dsh.composer.recall.prompts.at(-1) === 'sent while the page was away'"
        )


def test_a_queued_draft_taken_back_is_not_remembered_one_sent_is(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = [*bash_script("echo asked"), {"text": "answered the queued one"}]
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        send(page, "run it")
        page.wait_for_selector(ONCE)  # the turn waits: a draft now is queued
        send(page, "taken back draft")
        page.locator("#queued-prompt").wait_for(state="visible")
        page.press("#prompt", "Escape")
        page.wait_for_function(
            "() => document.getElementById('prompt').value === 'taken back draft'"
        )
        page.fill("#prompt", "")
        send(page, "queued and sent")
        page.locator("#queued-prompt").wait_for(state="visible")
        page.click(ONCE)
        wait_turn_over(page, "answered the queued one")
        wait_until(lambda: "queued and sent" in on_file(), 10.0, "the sent draft on file")
        assert on_file() == ["run it", "queued and sent"]
        assert page.evaluate("() => window.dsh.composer.recall.prompts") == [
            "run it",
            "queued and sent",
        ]


def test_up_and_down_move_in_an_open_completion_list(browser: Any, tmp_path: Path) -> None:
    PromptHistory(dsh_home()).append("an old prompt")
    env = make_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        page.wait_for_function("() => window.dsh.composer.recall.prompts.length === 1")
        page.locator("#prompt").press_sequentially("/re")
        page.press("#prompt", "Tab")
        hint = page.locator("#composer-hint .candidate")
        hint.first.wait_for()
        assert hint.all_inner_texts() == ["/retry", "/rewind"]
        selected = (
            "() => [...document.querySelectorAll('#composer-hint .candidate.selected')]"
            ".map((li) => li.textContent).join()"
        )
        page.press("#prompt", "ArrowUp")  # from none: the last
        page.wait_for_function(f"() => ({selected})() === '/rewind'")
        assert page.input_value("#prompt") == "/re"  # no history recalled
        active = page.get_attribute("#prompt", "aria-activedescendant")
        assert page.inner_text(f"#{active}") == "/rewind"
        page.press("#prompt", "ArrowDown")  # round to the first
        page.wait_for_function(f"() => ({selected})() === '/retry'")
        page.press("#prompt", "Enter")  # takes it, sends nothing
        page.wait_for_function("() => document.getElementById('prompt').value === '/retry '")
        page.locator("#composer-hint").wait_for(state="hidden")
        assert page.get_attribute("#prompt", "aria-activedescendant") is None
        # the list closed: Up walks the history again
        page.fill("#prompt", "")
        press(page, "ArrowUp", "an old prompt")
