""" "New session" in the page's sidebar, in a real browser, counted in the store as ``dsh
sessions list`` counts it (the real console script): clicked five times, it shows one new
session to type into ("New session" in the header) and the store holds none; its first prompt
writes it, under the id the page showed, and the session list shows it; "New session" then
starts another, which again is nowhere in the store until it is prompted.

``/new`` and ``/clear`` typed in the composer do what "New session" does (the terminal UI's
``/new`` and its synonym): a new session shown, the one left listed; in a new session nothing
happened in yet, they keep it and say so in the terminal UI's words."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import TOKEN, WebEnv, make_env
from tests.web.pages import open_page, send, serve, wait_turn_over
from tests.web.real_command import DSH
from tests.web.test_browser_undo import note_toast

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def listed(env: WebEnv) -> list[str]:
    """The ids ``dsh sessions list --all --json`` lists in the page's store."""
    home = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    home["DSH_HOME"] = str(env.root / "home")  # make_env's store
    done = subprocess.run(
        [DSH, "sessions", "list", "--all", "--json"],
        env=home,
        cwd=env.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [row["id"] for row in json.loads(done.stdout)]


def click_new_session(page: Any, leaving: str | None = None) -> str:
    """Click "New session"; the id of the session shown then (another than ``leaving``, when
    given: the click asks for a new one)."""
    page.click("#new-session")
    page.wait_for_function(
        """(leaving) => {
            const { info, sessionId } = window.dsh;
            return info && info.open && info.id === sessionId && sessionId !== leaving;
        }""",
        arg=leaving,
    )
    return str(page.evaluate("() => window.dsh.sessionId"))


def test_new_session_is_stored_by_its_first_prompt_not_by_its_clicks(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "first reply"}]
    with serve(env) as server, open_page(browser) as page:
        created: list[str] = []
        page.on(
            "request",
            lambda r: (
                created.append(r.url)
                if r.method == "POST" and r.url.endswith("/api/sessions")
                else None
            ),
        )
        page.goto(f"{server.base_url}/?token={TOKEN}")
        shown = {click_new_session(page) for _ in range(5)}
        assert len(shown) == 1  # the new session nothing happened in yet is kept
        [sid] = shown
        assert page.inner_text("#session-title") == "New session"
        assert page.evaluate("() => document.activeElement.id") == "prompt"
        assert env.store.list() == [] and listed(env) == []
        assert page.locator("#session-list .session-item").count() == 0

        send(page, "hello there")
        wait_turn_over(page, "first reply")
        assert (
            len(created) == 1
        )  # one asked for, by the first click (the turn's requests came later)
        assert [header.id for header in env.store.list()] == [sid]
        assert listed(env) == [sid]
        page.wait_for_selector(f"#session-list .session-item[data-id='{sid}']")
        assert page.inner_text("#session-title") == "hello there"

        another = click_new_session(page, leaving=sid)
        assert len(created) == 2
        assert page.inner_text("#session-title") == "New session"
        assert listed(env) == [sid] and another not in [h.id for h in env.store.list()]


def test_new_and_clear_in_the_composer_start_a_new_session_as_the_button_does(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "first reply"}]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        first = click_new_session(page)
        send(page, "/new")
        assert note_toast(page) == "This is a new session already: the next prompt starts it."
        assert page.evaluate("() => window.dsh.sessionId") == first
        assert page.input_value("#prompt") == ""

        send(page, "hello there")
        wait_turn_over(page, "first reply")
        send(page, "/new")
        second = wait_shown_other_than(page, first)
        assert page.inner_text("#session-title") == "New session"
        assert page.input_value("#prompt") == ""
        page.wait_for_selector(f"#session-list .session-item[data-id='{first}']")

        page.click(f"#session-list .session-item[data-id='{first}']")
        wait_shown_other_than(page, second)
        send(page, "/CLEAR")
        third = wait_shown_other_than(page, first)
        assert third not in (first, second)  # the session shown was no new one: another starts
        assert page.evaluate("() => window.dsh.info.draft") is True
        assert page.evaluate("() => document.activeElement.id") == "prompt"
    assert [header.id for header in env.store.list()] == [first]  # nothing else was sent


def wait_shown_other_than(page: Any, leaving: str) -> str:
    """The id of the open session shown once the page left ``leaving``."""
    page.wait_for_function(
        """(leaving) => {
            const { info, sessionId } = window.dsh;
            return info && info.id === sessionId && sessionId !== leaving;
        }""",
        arg=leaving,
    )
    return str(page.evaluate("() => window.dsh.sessionId"))
