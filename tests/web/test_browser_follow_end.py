"""A page that shows the conversation's end keeps showing it when the area under the conversation
grows: an approval card, the plan panel of a session opened, the composer made taller (a
``ResizeObserver`` on ``#conversation`` re-pins it, ``static/app.js``); one scrolled up stays
where it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.builders import long_session
from tests.web.conftest import TOKEN, make_env, open_client, wait_idle
from tests.web.pages import first_page_loaded, open_page, send, serve
from tests.web.test_approval_mode_api import bash_script
from tests.web.test_browser_plan import PLAN

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

AT_END = """() => {
  const c = document.getElementById('conversation');
  return c.scrollHeight > c.clientHeight && c.scrollHeight - c.scrollTop - c.clientHeight < 2;
}"""
PAST = [{"text": "logged before"}] * 12  # the scripted provider answers the log's 13th call next
ONCE = "#approvals .approval button[data-answer='once']"


def wait_at_end(page: Any) -> None:
    page.wait_for_function(AT_END, timeout=10_000)


def test_the_end_stays_in_view_when_an_approval_card_appears(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = [*PAST, *bash_script("echo asked")]
    sid = long_session(env.store, env.workspace, turns=6)
    with serve(env) as server, open_page(browser, height=700) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        wait_at_end(page)
        send(page, "run it")
        page.wait_for_selector(ONCE)
        height = page.evaluate("() => document.getElementById('approvals').offsetHeight")
        assert height > 100  # the card took that much from the conversation's box
        wait_at_end(page)  # the prompt and its call's card, not the turn before, at the bottom
        page.click(ONCE)
        page.wait_for_selector(ONCE, state="detached")


def test_a_session_opened_with_a_plan_shows_its_end_above_the_plan(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = [*PAST, PLAN, {"text": "planned and waiting"}]
    sid = long_session(env.store, env.workspace, turns=6)
    with open_client(env) as client:
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "plan it"})
        wait_idle(client, sid)
        client.post(f"/api/sessions/{sid}/close")
    with serve(env) as server, open_page(browser, height=700) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        page.locator("#plan").wait_for(state="visible")
        wait_at_end(page)


def test_a_taller_composer_keeps_the_end_and_a_page_scrolled_up_stays(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    sid = long_session(env.store, env.workspace, turns=6)
    with serve(env) as server, open_page(browser, height=700) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        wait_at_end(page)
        page.evaluate("() => { document.getElementById('prompt').style.height = '260px'; }")
        wait_at_end(page)
        # scrolled up (reading back): a resize leaves it there
        page.evaluate("() => { document.getElementById('conversation').scrollTop = 0; }")
        page.wait_for_function("() => window.dsh.atEnd === false")
        page.evaluate("() => { document.getElementById('prompt').style.height = '80px'; }")
        page.wait_for_function(
            "() => getComputedStyle(document.getElementById('prompt')).height === '80px'"
        )
        page.evaluate("() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)))")
        assert page.evaluate("() => document.getElementById('conversation').scrollTop") == 0
