"""``/rewind`` and ``/fork`` in ``dsh web`` (``dsh.web.fork_route``): ``GET …/turns`` lists the
turns a prompt started; ``POST …/fork`` copies the session, whole or up to a turn, answering the
new id, the prompt left out and the note, the original untouched; a busy, new or missing turn is
refused. In a real browser the composer's ``/rewind N`` opens the copy with that prompt in the
box and the note under the conversation, and ``/rewind`` lists the prompts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.agent.settings_record import latest
from dsh.events import TurnStartEvent, UserMessageEvent
from dsh.surface import Session
from dsh.transcript.shell_blocks import shell_block
from tests.web.conftest import WebEnv, make_env, new_session, open_client, wait_idle
from tests.web.pages import open_page, send, serve, wait_turn_over
from tests.web.test_browser_undo import open_new_session
from tests.web.test_composer_commands_api import scripted_runtime


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


def test_a_copy_keeps_the_model_chosen_and_turns_list_what_was_typed(tmp_path: Path) -> None:
    """``/model`` chose another model (no turn logged it): a whole copy and a rewound one run
    on it and record it; a prompt sent after a terminal UI's ``!cmd`` is listed by what was
    typed, and handed back so: what was typed, the ``!cmd`` output apart (``sentWith``)."""
    env = make_env(tmp_path)
    env.script = [{"text": "one done"}, {"text": "two done"}]
    typed = "after cmd prompt"
    block = shell_block("echo CMDOUT-77", "CMDOUT-77\n", failed=False)
    whole = block + "\n\n" + typed
    with open_client(env, scripted_runtime(env)) as client:
        sid = new_session(client)
        for text in ("do one", whole):
            client.post(f"/api/sessions/{sid}/prompt", json={"text": text})
            wait_idle(client, sid)
        turns = client.get(f"/api/sessions/{sid}/turns").json()["turns"]
        assert turns == [{"turn": 1, "prompt": "do one"}, {"turn": 2, "prompt": typed}]
        chosen = client.post(f"/api/sessions/{sid}/model", json={"name": "bigger-model"})
        assert chosen.status_code == 200
        copy = client.post(f"/api/sessions/{sid}/fork", json={}).json()
        rewound = client.post(f"/api/sessions/{sid}/fork", json={"beforeTurn": 2}).json()
        assert (rewound["prompt"], rewound["sentWith"]) == (typed, [block])
        assert copy["sentWith"] == [] and copy["prompt"] is None
        for made in (copy, rewound):
            assert client.post(f"/api/sessions/{made['id']}/resume").status_code == 200
            shown = client.get(f"/api/sessions/{made['id']}/model").json()
            assert shown.get("model") == "bigger-model", shown
    for made in (copy, rewound):
        with Session.open(env.store, made["id"]) as session:
            recorded = latest(session)
        assert recorded is not None and recorded.model == "bigger-model"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_rewinding_a_prompt_sent_after_a_cmd_puts_back_what_was_typed(browser: Any, tmp_path: Path):
    """A prompt a terminal UI sent after ``!cmd`` (its output ahead of what was typed): the
    page's ``/rewind`` puts back just what was typed, shows the output it was sent with, and
    sends that output again ahead of the next prompt, as the terminal UI's ``/rewind`` does."""
    env = make_env(tmp_path)
    env.script = [{"text": "one done"}, {"text": "two done"}]
    typed = "fix the failing test"
    block = shell_block("git status --short", " M calc.py\n", failed=False)
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        send(page, "do one")
        wait_turn_over(page, "one done")
        # the terminal UI's prompt after `!cmd`, sent through the API the page uses
        page.evaluate(
            """async ([sid, text]) => {
                const { api } = await import('/s/api.js');
                await api('POST', `/api/sessions/${sid}/prompt`, { text });
            }""",
            [sid, block + "\n\n" + typed],
        )
        wait_turn_over(page, "two done")
        send(page, "/rewind 2")
        page.wait_for_function(
            "(sid) => window.dsh.sessionId && window.dsh.sessionId !== sid"
            " && window.dsh.info && window.dsh.info.id === window.dsh.sessionId",
            arg=sid,
        )
        page.wait_for_function(
            "(typed) => document.getElementById('prompt').value === typed"
            " && document.getElementById('log').innerText.includes('sent to the model with your"
            " next prompt')",
            arg=typed,
        )
        log = str(page.evaluate("() => document.getElementById('log').innerText"))
        assert "I ran `git status --short` in the workspace; it printed:" in log
        assert "M calc.py" in log
        copy = str(page.evaluate("() => window.dsh.sessionId"))
        page.press("#prompt", "Enter")
        wait_turn_over(page, "two done")  # the script answers the turn by its number
    with Session.open(env.store, copy) as session:
        prompts = [e.data.text() for e in session.of_type(UserMessageEvent)]
    assert prompts[-1] == block + "\n\n" + typed  # the output went again, ahead of it
