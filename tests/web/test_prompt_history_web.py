"""The page composer's prompt history is the terminal UI's: ``GET /api/prompt-history`` answers
``$DSH_HOME/prompt_history.jsonl`` (oldest first, each text once; with ``session``, that
session's own prompts as the newest), ``POST`` appends a draft to it; in a real browser, up on
the composer's first line and down on its last walk it, keeping the draft being typed, and a
draft sent is on file for the terminal UI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.config import dsh_home
from dsh.config.prompt_history import PromptHistory
from tests.web.conftest import make_env, new_session, open_client, wait_idle, wait_until
from tests.web.pages import open_page, serve, wait_turn_over
from tests.web.test_browser_undo import open_new_session


def on_file() -> list[str]:
    return PromptHistory(dsh_home()).load()


def test_the_api_answers_and_appends_the_terminal_uis_history_file(tmp_path: Path) -> None:
    PromptHistory(dsh_home()).append("typed in the terminal")
    PromptHistory(dsh_home()).append("again")
    PromptHistory(dsh_home()).append("typed in the terminal")
    env = make_env(tmp_path)
    with open_client(env) as client:
        assert client.get("/api/prompt-history").json() == {
            "prompts": ["again", "typed in the terminal"]
        }
        assert client.post("/api/prompt-history", json={"text": "from the page"}).status_code == 204
        assert on_file()[-1] == "from the page"
        bad = client.post("/api/prompt-history", json={"prompt": "x"})
        assert bad.status_code == 400
        assert on_file()[-1] == "from the page"  # nothing appended for a bad body


def test_a_sessions_own_prompts_are_the_newest(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "done"}]
    with open_client(env) as client:
        sid = new_session(client)
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "the session's prompt"})
        wait_idle(client, sid)
        PromptHistory(dsh_home()).append("the session's prompt")
        PromptHistory(dsh_home()).append("sent elsewhere later")
        assert client.get("/api/prompt-history").json()["prompts"] == [
            "the session's prompt",
            "sent elsewhere later",
        ]
        seeded = client.get(f"/api/prompt-history?session={sid}").json()["prompts"]
        assert seeded == ["sent elsewhere later", "the session's prompt"]
        for unknown in ("nosuchsession", "../x"):  # no session's prompts: the file's alone
            answer = client.get(f"/api/prompt-history?session={unknown}")
            assert answer.json()["prompts"] == ["the session's prompt", "sent elsewhere later"]


def box(page: Any) -> str:
    return str(page.input_value("#prompt"))


def press(page: Any, key: str, expected: str) -> None:
    page.press("#prompt", key)
    page.wait_for_function("(v) => document.getElementById('prompt').value === v", arg=expected)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_up_and_down_walk_the_history_in_the_browser(browser: Any, tmp_path: Path) -> None:
    for text in ("oldest one", "older one"):
        PromptHistory(dsh_home()).append(text)
    env = make_env(tmp_path)
    env.script = [{"text": "hello back"}]
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        page.wait_for_function("() => window.dsh.composer.recall.prompts.length === 2")
        page.locator("#prompt").press_sequentially("half typed")
        press(page, "ArrowUp", "older one")
        press(page, "ArrowUp", "oldest one")
        press(page, "ArrowUp", "oldest one")  # the oldest stays
        press(page, "ArrowDown", "older one")
        press(page, "ArrowDown", "half typed")  # past the newest: the draft back

        page.fill("#prompt", "line one\nline two")  # the caret at the end: on the last line
        page.press("#prompt", "ArrowUp")  # moves the caret to the first line, recalls nothing
        assert box(page) == "line one\nline two"
        press(page, "ArrowUp", "older one")  # now on the first line

        page.fill("#prompt", "sent from the page")
        page.press("#prompt", "Enter")
        wait_turn_over(page, "hello back")
        page.wait_for_function(
            "() => window.dsh.composer.recall.prompts.at(-1) === 'sent from the page'"
        )
        press(page, "ArrowUp", "sent from the page")
        wait_until(lambda: on_file()[-1] == "sent from the page", 10.0, "the append")
    assert on_file() == ["oldest one", "older one", "sent from the page"]
