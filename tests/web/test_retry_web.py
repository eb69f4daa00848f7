"""``/retry`` in ``dsh web``: ``GET …/retry`` answers the last turn's prompt when that turn
failed or was cancelled (else null and the terminal UI's line), for a session open here or
read from the store; the page's composer sends that prompt again, unretyped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.agent.retry_command import COMPLETED, NOTHING_YET
from dsh.events import TurnEndEvent, UserMessageEvent, UserSource
from dsh.surface import Session
from tests.web.conftest import WebEnv, make_env, new_session, open_client, wait_idle
from tests.web.pages import open_page, send, serve, wait_turn_over
from tests.web.test_browser_undo import note_toast, open_new_session

FAILS = {"error": {"code": "BAD_REQUEST", "message": "the server refused it"}}


def logged(env: WebEnv, sid: str) -> tuple[list[str], list[str]]:
    with Session.open(env.store, sid) as session:
        prompts = [
            e.data.text()
            for e in session.of_type(UserMessageEvent)
            if isinstance(e.data.source, UserSource)
        ]
        ends = [e.data.reason.kind for e in session.of_type(TurnEndEvent)]
    return prompts, ends


def test_retry_answers_a_failed_turns_prompt_open_here_and_stored(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [FAILS, {"text": "fine"}]
    with open_client(env) as client:
        sid = new_session(client)
        assert client.get(f"/api/sessions/{sid}/retry").json() == {
            "prompt": None,
            "note": NOTHING_YET,
        }
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "do the thing"})
        wait_idle(client, sid)
        answer = client.get(f"/api/sessions/{sid}/retry").json()
        assert answer == {
            "prompt": "do the thing",
            "note": "Retrying the last turn's prompt (that turn failed).",
        }
        client.post(f"/api/sessions/{sid}/close")
    with open_client(env) as fresh:  # read from the store, not opened for it
        assert fresh.get(f"/api/sessions/{sid}/retry").json() == answer
        assert fresh.get(f"/api/sessions/{sid}").json()["open"] is False
    assert logged(env, sid) == (["do the thing"], ["error"])  # asking logged nothing


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_composers_retry_sends_the_prompt_again(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [FAILS, {"text": "it worked this time"}]
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        send(page, "please fix it")
        wait_turn_over(page, "the server refused it")
        send(page, "/retry")
        assert note_toast(page) == "Retrying the last turn's prompt (that turn failed)."
        wait_turn_over(page, "it worked this time")
        assert page.input_value("#prompt") == ""
        send(page, "/retry")
        assert note_toast(page) == COMPLETED
    assert logged(env, sid) == (["please fix it"] * 2, ["error", "completed"])
