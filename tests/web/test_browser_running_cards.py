"""``dsh web``'s tool cards say what the terminal UI's say (``tests/tui/test_running_cards.py``):
a call running says for how long (``running… 12 s``), counted from the call's logged time, so a
page that joins mid-call shows the time since the call started, not since it joined; the card of
a call whose approval is asked says ``waiting for your approval``. Counts are never read for an
exact value on the real clock: a test waits for a pattern, or for a count larger than one seen
before, or holds the clock the page counts by."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.events import AssistantMessage, StepStart, ToolCall, ToolCallBlock, TurnStart
from dsh.store import now_millis
from dsh.surface import Session
from dsh.tui.running_cards import ASKING, RUNNING
from tests.web.builders import assistant, user
from tests.web.conftest import TOKEN, WebEnv, make_env
from tests.web.pages import first_page_loaded, open_page, send, serve, wait_idle

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

STATUS = "#log .row.tool .tool-status"
COUNTED = rf"^{RUNNING} (\d+) s$"


def held_call(env: WebEnv, tmp_path: Path) -> Path:
    """Script a turn whose ``bash`` call runs until the returned file exists."""
    release = tmp_path / "release"
    wait_loop = f"while [ ! -e {release} ]; do sleep 0.02; done; echo released"
    env.script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": wait_loop}}]},
        {"text": "the command ended"},
    ]
    return release


def count_at_least(page: Any, least: int) -> int:
    """Wait until the running card says ``running… N s`` with N >= ``least``; N."""
    handle = page.wait_for_function(
        """([selector, pattern, least]) => {
            const status = document.querySelector(selector);
            const match = status && status.textContent.match(new RegExp(pattern));
            return match && Number(match[1]) >= least ? Number(match[1]) : null;
        }""",
        arg=[STATUS, COUNTED, least],
    )
    return int(handle.json_value())


def first_count(page: Any) -> int:
    """The first ``running… N s`` the running card of a page that just opened says."""
    return count_at_least(page, 0)


def start_session(page: Any, base_url: str) -> str:
    page.goto(f"{base_url}/?token={TOKEN}")
    page.click("#new-session")
    page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
    send(page, "run the command")
    page.locator(STATUS).wait_for()
    sid: str = page.evaluate("() => window.dsh.sessionId")
    return sid


def test_a_running_card_counts_its_seconds_from_the_call_start_then_shows_its_result(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    release = held_call(env, tmp_path)
    with serve(env) as server, open_page(browser) as page, open_page(browser) as joined:
        sid = start_session(page, server.base_url)
        seen = count_at_least(page, 1)
        seen = count_at_least(page, seen + 1)  # it grows, once a second
        assert page.evaluate("() => window.dsh.view.running.timer !== null")
        # a page that joins now counts from the call's start, not from its own load
        joined.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        assert first_count(joined) >= seen
        release.touch()
        for shown in (page, joined):
            shown.wait_for_selector(f"{STATUS}:text-is('done')")
            wait_idle(shown)
            # no card runs: the page's one timer is stopped
            assert shown.evaluate("() => window.dsh.view.running.timer === null")
            assert "released" in shown.locator("#log .row.tool .tool-output").text_content()


def test_the_card_of_a_call_asked_about_waits_for_your_approval_then_runs(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path, approval="ask")
    release = held_call(env, tmp_path)
    with serve(env) as server, open_page(browser) as page, open_page(browser) as joined:
        sid = start_session(page, server.base_url)
        approval = page.locator("#approvals .approval")
        approval.wait_for()
        page.wait_for_selector(f"{STATUS}:text-is('{ASKING}')")
        # a page that joins while it is asked says so too
        joined.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        joined.locator("#approvals .approval").wait_for()
        joined.wait_for_selector(f"{STATUS}:text-is('{ASKING}')")
        # the first page's cards read a clock the test holds, ten minutes on from now
        page.evaluate(
            "() => { const r = window.dsh.view.running; r.at = Date.now() + 600000;"
            " r.clock = () => r.at; }"
        )
        approval.locator("button[data-answer='once']").click()
        approval.wait_for(state="detached")
        joined.wait_for_function(
            "([selector, pattern]) => new RegExp(pattern)"
            ".test(document.querySelector(selector).textContent)",
            arg=[STATUS, rf"^{RUNNING}( \d+ s)?$"],
        )
        # counted from the answer, not from the call ten minutes before it
        page.wait_for_selector(f"{STATUS}:text-is('{RUNNING}')")
        page.evaluate("() => { const r = window.dsh.view.running; r.at += 5000; r.update(); }")
        assert page.inner_text(STATUS) == f"{RUNNING} 5 s"
        count_at_least(joined, 1)  # and the other page counts on its own clock
        release.touch()
        for shown in (page, joined):
            shown.wait_for_selector(f"{STATUS}:text-is('done')")
            wait_idle(shown)
            assert shown.evaluate("() => window.dsh.view.running.timer === null")
        assert "released" in page.locator("#log .row.tool .tool-output").text_content()


def test_a_stored_card_without_a_result_does_not_count(browser: Any, tmp_path: Path) -> None:
    """A session whose process ended mid-call (its log not repaired yet): the card's call is
    old and runs nowhere, so it says a plain ``running…`` and the page runs no timer."""
    env = make_env(tmp_path)
    hour_ago = now_millis() - 3_600_000  # counted, the card would say so at once
    session = Session(env.store.create(cwd=str(env.workspace)), clock=lambda: hour_ago)
    session.append(TurnStart(turn=1))
    session.append(StepStart(turn=1, step=1))
    session.append(user("run it", 1))
    call = ToolCallBlock(id="call_1", name="bash", arguments='{"command": "sleep 1000"}')
    session.append(AssistantMessage(turn=1, step=1, message=assistant("Running.", "a-1", call)))
    session.append(
        ToolCall(turn=1, step=1, call_id="call_1", name="bash", arguments=call.arguments)
    )
    session.close()
    lines = env.store.log_path(session.id).read_bytes()
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={session.id}")
        first_page_loaded(page)
        assert page.inner_text(STATUS) == RUNNING
        assert page.evaluate("() => window.dsh.view.running.timer === null")
    assert env.store.log_path(session.id).read_bytes() == lines  # read, not repaired
