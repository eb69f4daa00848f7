"""A fresh page of ``dsh web`` (no session shown), in a real browser: its composer is usable at
once, the focus in it, as Claude Code's and opencode's are; Enter starts a new session in the
server's default workspace, as "New session" does, and sends the draft as its first turn. When
no session can start, the draft stays in the box (a reload keeps it too) and one line says why.
A command typed there runs in the session it starts: ``/model NAME`` chooses the model its turns
run on, ``/help`` lists that workspace's commands, ``/new`` only starts it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.runtime import Route
from dsh.config import Settings
from dsh.errors import ConfigError
from dsh.web import BackgroundServer, WebRuntime
from tests.web.conftest import TOKEN, WebEnv, make_env
from tests.web.pages import open_page, serve, wait_turn_over
from tests.web.test_browser_focus import wait_focus
from tests.web.test_browser_screens import open_page as screen_page
from tests.web.test_browser_undo import note_toast

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SHOWN = "() => window.dsh.info && window.dsh.info.id === window.dsh.sessionId"


def fresh(page: Any, base_url: str) -> None:
    """A page with no session shown, its composer focused (nothing clicked)."""
    page.goto(f"{base_url}/?token={TOKEN}")
    page.wait_for_function("() => window.dsh && window.dsh.composer")
    wait_focus(page, "prompt")
    assert page.is_enabled("#prompt") and page.is_enabled("#send")


def typed(page: Any, text: str) -> None:
    """``text`` typed into what has the focus, as keys (Shift+Enter for a line break)."""
    for at, line in enumerate(text.split("\n")):
        if at:
            page.keyboard.press("Shift+Enter")
        page.keyboard.type(line)


def user_texts(env: WebEnv, session_id: str) -> list[str]:
    events = [json.loads(line) for line in env.log_lines(session_id)]
    return [
        "".join(b["text"] for b in e["data"]["content"] if b["type"] == "text")
        for e in events
        if e["type"] == "user/message"
    ]


def test_a_fresh_page_takes_a_prompt_at_once_and_enter_starts_a_session_with_it(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "first reply"}]
    with serve(env) as server, open_page(browser) as page:
        fresh(page, server.base_url)
        assert page.inner_text("#empty") == "Type a prompt to start a new session, or pick one."
        typed(page, "hello there")
        page.keyboard.press("Enter")
        wait_turn_over(page, "first reply")
        sid = str(page.evaluate("() => window.dsh.sessionId"))
        assert page.evaluate("() => location.hash") == f"#s={sid}"
        assert page.input_value("#prompt") == ""
        assert page.inner_text("#session-title") == "hello there"
        page.wait_for_selector(f"#session-list .session-item[data-id='{sid}']")
        wait_focus(page, "prompt")
    (header,) = env.store.list()
    assert header.id == sid and Path(header.cwd) == env.workspace  # the server's default
    assert user_texts(env, sid) == ["hello there"]


class RefusingWorkspace:
    """The workspace's settings, which do not load until ``fixed``: no session starts there."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.fixed = False

    def __call__(self, workspace: str) -> Settings:
        if not self.fixed:
            raise ConfigError(f"{workspace}/.dsh/config.toml: unknown key 'colour'")
        return self.settings


def test_when_no_session_can_start_the_draft_stays_and_one_line_says_why(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "it went"}]
    workspace = RefusingWorkspace(env.settings)
    runtime = WebRuntime(
        env.settings, Route(env.provider(), "scripted", env.window), workspaces=workspace
    )
    server = BackgroundServer(env.app(runtime)).start()
    try:  # the refusal is the one console error
        with screen_page(browser, 1280, allow="503 (Service Unavailable)") as page:
            fresh(page, server.base_url)
            page.evaluate("() => { window.dsh.toastMs = null; }")  # no timer races the reading
            typed(page, "keep me\nwhole")
            page.keyboard.press("Enter")
            page.wait_for_selector("#toast:not([hidden])")
            said = page.inner_text("#toast")
            assert said.startswith("Not sent: no new session could be started (")
            assert "unknown key 'colour'" in said and said.endswith("The draft stays.")
            assert "\n" not in said
            assert page.input_value("#prompt") == "keep me\nwhole"
            assert page.evaluate("() => [location.hash, window.dsh.sessionId]") == ["", None]
            assert page.is_enabled("#prompt")

            page.reload()  # kept in the tab as it was typed
            fresh(page, server.base_url)
            assert page.input_value("#prompt") == "keep me\nwhole"

            workspace.fixed = True
            page.keyboard.press("Enter")
            wait_turn_over(page, "it went")
            sid = str(page.evaluate("() => window.dsh.sessionId"))
            assert page.input_value("#prompt") == ""
            page.goto(f"{server.base_url}/?token={TOKEN}")  # a fresh page again: nothing kept
            wait_focus(page, "prompt")
            assert page.input_value("#prompt") == ""
    finally:
        server.stop()
    assert user_texts(env, sid) == ["keep me\nwhole"]


def test_commands_typed_on_a_fresh_page_run_in_the_session_it_starts(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "an answer"}]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(env.script))
    server = BackgroundServer(env.app(WebRuntime(env.settings, script=script))).start()
    try:
        with open_page(browser) as page:
            fresh(page, server.base_url)
            typed(page, "/help")
            page.keyboard.press("Enter")
            page.locator("#help-panel").wait_for(state="visible")
            page.wait_for_function(SHOWN)
            assert page.inner_text("#session-title") == "New session"
            page.keyboard.press("Escape")
            page.locator("#help-panel").wait_for(state="hidden")

            fresh(page, server.base_url)
            typed(page, "/new")
            page.keyboard.press("Enter")
            page.wait_for_function(SHOWN)
            assert page.inner_text("#session-title") == "New session"
            assert page.input_value("#prompt") == ""
            assert page.locator("#log .notice.local").count() == 0  # not "a new session already"

            fresh(page, server.base_url)
            typed(page, "/model bigger-model")
            page.keyboard.press("Enter")
            assert note_toast(page).startswith("Model for the next turns: bigger-model.")
            sid = str(page.evaluate("() => window.dsh.sessionId"))
            assert env.store.list() == []  # none of them is stored before its first prompt
            typed(page, "say something")
            page.keyboard.press("Enter")
            wait_turn_over(page, "an answer")
    finally:
        server.stop()
    replies = [json.loads(line) for line in env.log_lines(sid)]
    models = [
        e["data"]["message"]["source"]["model"] for e in replies if e["type"] == "assistant/message"
    ]
    assert models == ["bigger-model"]
    assert [h.id for h in env.store.list()] == [sid]


def test_new_session_takes_along_what_was_typed_on_a_fresh_page(
    browser: Any, tmp_path: Path
) -> None:
    with serve(make_env(tmp_path)) as server, open_page(browser) as page:
        fresh(page, server.base_url)
        typed(page, "half a thought")
        page.click("#new-session")
        page.wait_for_function(SHOWN)
        assert page.input_value("#prompt") == "half a thought"
        page.goto(f"{server.base_url}/?token={TOKEN}")  # no longer the fresh page's
        wait_focus(page, "prompt")
        assert page.input_value("#prompt") == ""
