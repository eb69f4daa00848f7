"""Enter while a turn runs queues the draft, as the terminal UI does (``static/queue.js``), in a
real browser: it shows below the conversation as queued, is sent when the turn ends well, can be
taken back into the box, comes back into the box (unsent) after a reload, and goes back into
the box with a note when the turn is stopped; a second one meanwhile is refused, its draft kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import make_env
from tests.web.pages import first_page_loaded, open_page, send, serve, wait_idle
from tests.web.test_browser_undo import note_toast, open_new_session, toast_says, wait_for_row

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ONCE = "#approvals .approval button[data-answer='once']"
QUEUED = "#queued-prompt"


def asking_env(tmp_path: Path) -> Any:
    env = make_env(tmp_path, approval="ask")  # the first turn waits on its approval
    call = {"name": "bash", "arguments": {"command": "echo first-ran"}}
    env.script = [{"toolCalls": [call]}, {"text": "first done"}, {"text": "second done"}]
    return env


def prompts(env: Any, sid: str) -> list[str]:
    events = [json.loads(line) for line in env.log_lines(sid)]
    return [
        e["data"]["content"][0]["text"]
        for e in events
        if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"
    ]


def queued_text(page: Any) -> str | None:
    shown: str | None = page.evaluate(
        """() => {
            const row = document.getElementById('queued-prompt');
            return row.hidden ? null : row.querySelector('.body').textContent;
        }"""
    )
    return shown


def test_a_draft_sent_while_a_turn_runs_is_queued_and_sent_when_it_ends(
    browser: Any, tmp_path: Path
) -> None:
    env = asking_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        send(page, "first")
        page.wait_for_selector(ONCE)
        send(page, "second, queued")
        page.wait_for_selector(QUEUED, state="visible")
        assert queued_text(page) == "second, queued"
        assert "queued: sent when this turn ends" in page.inner_text(QUEUED)
        assert page.input_value("#prompt") == ""
        assert page.is_hidden("#toast")  # no refusal
        assert page.is_enabled("#send")

        send(page, "third")  # one at a time
        toast_says(page, "A draft is queued already")
        assert page.input_value("#prompt") == "third"
        assert queued_text(page) == "second, queued"
        page.fill("#prompt", "")

        page.click(ONCE)
        wait_for_row(page, ".row.assistant", "second done")
        wait_idle(page)
        assert queued_text(page) is None
        assert prompts(env, sid) == ["first", "second, queued"]


def test_a_queued_draft_can_be_taken_back_survives_a_reload_and_a_stop_puts_it_back(
    browser: Any, tmp_path: Path
) -> None:
    env = asking_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        send(page, "first")
        page.wait_for_selector(ONCE)
        send(page, "queued once")
        page.wait_for_selector(QUEUED, state="visible")
        page.fill("#prompt", "typed since")
        page.click(f"{QUEUED} .queued-take-back")
        assert queued_text(page) is None
        assert page.input_value("#prompt") == "queued once\ntyped since"

        send(page, "queued again")
        page.wait_for_selector(QUEUED, state="visible")
        page.reload()  # the page that queued it is gone: back in the box, unsent
        first_page_loaded(page)
        page.wait_for_selector(ONCE)
        assert page.input_value("#prompt") == "queued again"
        assert queued_text(page) is None

        send(page, "queued last")
        page.wait_for_selector(QUEUED, state="visible")
        page.click("#cancel")  # the turn did not end well: not sent
        wait_idle(page)
        page.wait_for_function("() => document.getElementById('prompt').value === 'queued last'")
        assert queued_text(page) is None
        assert note_toast(page) == "The queued draft was not sent: it is back in the box."
    assert prompts(env, sid) == ["first"]


def test_esc_in_the_box_takes_a_queued_draft_back(browser: Any, tmp_path: Path) -> None:
    env = asking_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        send(page, "first")
        page.wait_for_selector(ONCE)
        send(page, "queued, then taken back")
        page.wait_for_selector(QUEUED, state="visible")
        page.fill("#prompt", "typed since")
        page.press("#prompt", "Escape")  # the terminal UI's key
        page.wait_for_selector(QUEUED, state="hidden")
        assert page.input_value("#prompt") == "queued, then taken back\ntyped since"
        page.press("#prompt", "Escape")  # nothing queued: it stops the turn, as in the terminal UI
        page.wait_for_selector(ONCE, state="detached")
        wait_idle(page)
        assert page.input_value("#prompt") == "queued, then taken back\ntyped since"
    assert prompts(env, sid) == ["first"]  # the draft taken back was never sent
