"""``dsh web``'s keys for what the terminal UI does with keys, in a real browser: with the focus
in an approval card, o allows once, d denies, Esc stops the turn, the call not run (a key typed
in the composer answers nothing); Esc in the composer, with no list to close and no queued
draft, stops the running turn as Stop does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.events import ToolResultEvent, TurnEndEvent
from dsh.surface import Session
from tests.web.conftest import WebEnv, make_env
from tests.web.pages import open_page, send, serve, wait_idle, wait_turn_over
from tests.web.test_browser_undo import open_new_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ASKS = {"toolCalls": [{"name": "bash", "arguments": {"command": "echo ran-by-key"}}]}


def logged(env: WebEnv, sid: str) -> tuple[list[str], list[str]]:
    """The session's tool results (as their reprs: output included) and its turns' end reasons."""
    with Session.open(env.store, sid) as session:
        results = [repr(e.data) for e in session.of_type(ToolResultEvent)]
        ends = [e.data.reason.kind for e in session.of_type(TurnEndEvent)]
    return results, ends


def asked(page: Any) -> Any:
    send(page, "run it")
    card = page.locator("#approvals .approval")
    card.wait_for()
    return card


@pytest.mark.parametrize(("key", "reply"), [("o", "allowed"), ("d", "denied")])
def test_a_key_in_the_approval_card_answers_it(
    browser: Any, tmp_path: Path, key: str, reply: str
) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = [ASKS, {"text": reply}]
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        card = asked(page)
        page.locator("#prompt").press_sequentially(key)  # typed in the composer: a letter
        assert page.input_value("#prompt") == key
        assert card.is_visible()
        card.locator("button").first.focus()
        page.keyboard.press(key)
        wait_turn_over(page, reply)
    results, ends = logged(env, sid)
    assert ends == ["completed"]
    assert ("ran-by-key" in results[0]) is (key == "o"), results


def test_esc_in_the_approval_card_stops_the_turn_without_running_the_call(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = [ASKS, {"text": "never said"}]
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        card = asked(page)
        card.locator("button").first.focus()
        page.keyboard.press("Escape")
        card.wait_for(state="detached")
        wait_idle(page)
    results, ends = logged(env, sid)
    assert ends == ["aborted"]
    assert not any("ran-by-key" in r for r in results)


def test_esc_in_the_composer_stops_the_running_turn(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = [ASKS, {"text": "never said"}]
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        card = asked(page)  # the turn runs while its approval waits
        page.locator("#prompt").press("Escape")
        card.wait_for(state="detached")
        wait_idle(page)
        page.locator("#prompt").press("Escape")  # no turn runs: nothing happens, no error
    assert logged(env, sid)[1] == ["aborted"]
