"""``/rewind`` and ``/fork`` in ``dsh web`` (``dsh.web.fork_route``): ``GET …/turns`` lists the
turns a prompt started; ``POST …/fork`` copies the session, whole or up to a turn, answering the
new id, the prompt left out and the note, the original untouched; a busy, new or missing turn is
refused. In a real browser the composer's ``/rewind N`` opens the copy with that prompt in the
box and the note under the conversation, and ``/rewind`` lists the prompts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.events import TurnStartEvent
from dsh.surface import Session
from tests.web.conftest import WebEnv, make_env, new_session, open_client, wait_idle
from tests.web.pages import open_page, send, serve, wait_turn_over
from tests.web.test_browser_undo import open_new_session


def turn_count(env: WebEnv, sid: str) -> int:
    with Session.open(env.store, sid) as session:
        return len(session.of_type(TurnStartEvent))


def test_the_api_lists_turns_and_forks(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "one done"}, {"text": "two done"}]
    with open_client(env) as client:
        sid = new_session(client)
        refused = client.post(f"/api/sessions/{sid}/fork", json={})
        assert refused.status_code == 400 and "nothing to copy" in refused.text
        for text in ("do one", "do two"):
            client.post(f"/api/sessions/{sid}/prompt", json={"text": text})
            wait_idle(client, sid)
        turns = client.get(f"/api/sessions/{sid}/turns").json()["turns"]
        assert turns == [{"turn": 1, "prompt": "do one"}, {"turn": 2, "prompt": "do two"}]
        missing = client.post(f"/api/sessions/{sid}/fork", json={"beforeTurn": 9})
        assert missing.status_code == 400 and "its turns with one: 1, 2" in missing.text
        bad = client.post(f"/api/sessions/{sid}/fork", json={"beforeTurn": 0})
        assert bad.status_code == 400
        made = client.post(f"/api/sessions/{sid}/fork", json={"beforeTurn": 2}).json()
        assert made["prompt"] == "do two"
        assert made["note"].startswith(f"Forked session {sid} before turn 2 into {made['id']}")
        whole = client.post(f"/api/sessions/{sid}/fork", json={}).json()
        assert whole["prompt"] is None
        listed = {s["id"] for s in client.get("/api/sessions").json()["sessions"]}
        assert {made["id"], whole["id"]} <= listed
    assert turn_count(env, sid) == 2
    assert turn_count(env, made["id"]) == 1 and turn_count(env, whole["id"]) == 2


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_composers_rewind_opens_the_copy_with_the_prompt(browser: Any, tmp_path: Path):
    env = make_env(tmp_path)
    env.script = [{"text": "one done"}, {"text": "two done"}]
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        send(page, "do one")
        wait_turn_over(page, "one done")
        send(page, "do two")
        wait_turn_over(page, "two done")
        send(page, "/rewind")
        page.wait_for_function(
            "() => /2\\s+do two\\s+1\\s+do one/.test(document.getElementById('log').innerText)"
        )
        send(page, "/rewind 2")
        page.wait_for_function(
            "(sid) => window.dsh.sessionId && window.dsh.sessionId !== sid"
            " && window.dsh.info && window.dsh.info.id === window.dsh.sessionId",
            arg=sid,
        )
        page.wait_for_function(
            "() => document.getElementById('prompt').value === 'do two'"
            " && document.getElementById('log').innerText.includes('Forked session')"
        )
        log = str(page.evaluate("() => document.getElementById('log').innerText"))
        assert "one done" in log and "two done" not in log
    assert turn_count(env, sid) == 2
