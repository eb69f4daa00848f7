"""A session created through the API is written to the store by its first prompt, not before
(``dsh.web.drafts``): created five times and never prompted, the store holds no session; the
first prompt writes it with the id, creation time and workspace the page was given, and the
turn runs on the stored session. A new session closed, or left when the server stops, leaves
nothing; one whose first prompt cannot start (no API key) is not written either. The session
list shows sessions once prompted; ``/compact`` before the first prompt answers and logs
nothing."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.testclient import TestClient

from dsh.agent.session_runner import NOTHING_TO_COMPACT
from dsh.errors import ConfigError
from dsh.surface import Session
from dsh.web import WebRuntime
from tests.web.conftest import WebEnv, error_of, new_session, open_client, wait_idle


def test_sessions_created_and_not_prompted_leave_the_store_empty(env: WebEnv) -> None:
    with open_client(env) as client:
        made = [client.post("/api/sessions", json={}).json()["session"] for _ in range(5)]
        assert len({s["id"] for s in made}) == 5
        assert all(s["draft"] is True and s["open"] is True for s in made)
        assert env.store.list() == []
        assert client.get("/api/sessions").json() == {"sessions": []}
        for session in made:  # each is there to show and type into
            info = client.get(f"/api/sessions/{session['id']}").json()
            assert (info["draft"], info["lastSeq"], info["title"]) == (True, -1, None)
            history = client.get(f"/api/sessions/{session['id']}/history").json()
            assert history["events"] == []
    assert env.store.list() == []  # the server stopped: nothing was kept of them


def test_the_first_prompt_writes_the_session_as_the_page_was_given_it(env: WebEnv) -> None:
    with open_client(env) as client:
        given = client.post("/api/sessions", json={}).json()["session"]
        sid = given["id"]
        assert client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"}).is_success
        info = wait_idle(client, sid)
        [header] = env.store.list()
        assert (header.id, header.created_at, header.cwd) == (sid, given["createdAt"], given["cwd"])
        assert info["draft"] is False and info["title"] == "read notes"
        [row] = client.get("/api/sessions").json()["sessions"]
        assert (row["id"], row["open"], row["title"]) == (sid, True, "read notes")
    types = [json.loads(line)["type"] for line in env.log_lines(sid)]
    assert types[:2] == ["session/settings", "turn/start"] and types[-1] == "turn/end"
    with Session.open(env.store, sid) as stored:  # a whole log, as any other face reads it
        assert len(stored.events) == len(types)


def test_a_new_session_closed_before_a_prompt_is_gone(env: WebEnv) -> None:
    with open_client(env) as client:
        sid = new_session(client)
        assert client.post(f"/api/sessions/{sid}/close").json() == {"closed": True}
        assert error_of(client.get(f"/api/sessions/{sid}")) == (404, "SESSION_NOT_FOUND")
        assert error_of(client.post(f"/api/sessions/{sid}/resume")) == (404, "SESSION_NOT_FOUND")
    assert env.store.list() == []


def test_a_first_prompt_that_cannot_start_writes_nothing(env: WebEnv, tmp_path: Path) -> None:
    def no_key() -> object:
        raise ConfigError("no API key for deepseek: set DEEPSEEK_API_KEY")

    with open_client(env, WebRuntime(env.settings, no_key)) as client:  # type: ignore[arg-type]
        sid = new_session(client)
        response = client.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"})
        assert error_of(response) == (503, "PROVIDER_NOT_CONFIGURED")
        assert client.get(f"/api/sessions/{sid}").json()["draft"] is True
    assert env.store.list() == []


def test_list_is_empty_then_shows_prompted_sessions_newest_first(env: WebEnv) -> None:
    env.script = [{"text": "one"}, {"text": "two"}]
    with open_client(env) as client:
        assert client.get("/api/sessions").json() == {"sessions": []}
        first, second = new_session(client), new_session(client)
        assert client.get("/api/sessions").json() == {"sessions": []}  # no prompt yet
        for sid in (first, second):
            assert client.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"}).is_success
            wait_idle(client, sid)
        rows = client.get("/api/sessions").json()["sessions"]
    assert [r["id"] for r in rows] == sorted([first, second], reverse=True)
    assert all(r["open"] is True and r["running"] is None for r in rows)


def test_compact_with_nothing_to_compact_still_answers(client: TestClient, env: WebEnv) -> None:
    """A stored session logs the command and its answer; a new one, before its first prompt,
    answers at once (as the terminal UI does then) and is still not written."""
    sid = new_session(client)
    response = client.post(f"/api/sessions/{sid}/compact", json={})
    assert response.status_code == 200
    assert response.json() == {"started": None, "answer": NOTHING_TO_COMPACT}
    assert not env.store.log_path(sid).exists()
    with Session.create(env.store, cwd=env.workspace) as stored:
        sid = stored.id
    client.post(f"/api/sessions/{sid}/resume")
    client.post(f"/api/sessions/{sid}/compact", json={})
    wait_idle(client, sid)
    done = json.loads(env.log_lines(sid)[-1])
    assert done["type"] == "command/done" and "sourceEventSeq" not in done["data"]
