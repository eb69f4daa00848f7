"""``POST /api/sessions/{id}/undo``: the page's ``/undo`` takes back the last turn's file edits
(``dsh.agent.undo``), logged as ``command/run``, the plugin note to the model and
``command/done``; refused as busy while a turn runs, and only for a session open here. Over a
real server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsh.agent.undo import NOTHING_TO_UNDO
from dsh.surface import Session
from dsh.web import BackgroundServer
from tests.web.conftest import AUTH, WebEnv, make_env, wait_until

BEFORE = "def add(a, b):\n    return a - b\n"
AFTER = "def add(a, b):\n    return a + b\n"
EDIT = {"path": "calc.py", "old": "return a - b", "new": "return a + b"}
EDIT_TURN = [{"toolCalls": [{"name": "edit_file", "arguments": EDIT}]}, {"text": "fixed"}]


@pytest.fixture
def edit_env(tmp_path: Path) -> WebEnv:
    env = make_env(tmp_path)
    (env.workspace / "calc.py").write_text(BEFORE)
    env.script = list(EDIT_TURN)
    return env


@pytest.fixture
def http(edit_env: WebEnv) -> Iterator[httpx.Client]:
    with (
        BackgroundServer(edit_env.app()) as server,
        httpx.Client(base_url=server.base_url, headers=AUTH, timeout=30) as client,
    ):
        yield client


def new_session(http: httpx.Client) -> str:
    response = http.post("/api/sessions", json={})
    assert response.status_code == 201, response.text
    return str(response.json()["session"]["id"])


def info(http: httpx.Client, sid: str) -> dict[str, Any]:
    return dict(http.get(f"/api/sessions/{sid}").json())


def run_turn(http: httpx.Client, sid: str, text: str = "fix add") -> None:
    assert http.post(f"/api/sessions/{sid}/prompt", json={"text": text}).status_code == 202
    wait_until(lambda: info(http, sid)["running"] is None, 30, "the turn to end")


def log_types(env: WebEnv, sid: str) -> list[str]:
    return [json.loads(line)["type"] for line in env.log_lines(sid)]


def error(response: httpx.Response) -> tuple[int, str]:
    body = response.json()
    assert set(body) == {"error"} and body["error"]["message"], body
    return response.status_code, str(body["error"]["code"])


def test_undo_restores_the_files_of_the_last_turn_and_logs_it(
    http: httpx.Client, edit_env: WebEnv
) -> None:
    sid = new_session(http)
    run_turn(http, sid)
    calc = edit_env.workspace / "calc.py"
    assert calc.read_text() == AFTER
    turn = json.loads(edit_env.log_lines(sid)[1])["data"]["turn"]  # the one turn/start
    response = http.post(f"/api/sessions/{sid}/undo", json={})
    assert response.status_code == 200, response.text
    assert response.json() == {
        "ok": True,
        "lines": [f"Undid turn {turn}:", "  restored calc.py"],
        "turn": turn,
        "dryRun": False,
        "logged": True,
    }
    assert calc.read_text() == BEFORE
    events = [json.loads(line) for line in edit_env.log_lines(sid)]
    run, note, done = events[-3:]
    assert [run["type"], note["type"], done["type"]] == [
        "command/run",
        "user/message",
        "command/done",
    ]
    assert run["data"]["name"] == "undo"
    assert note["data"]["source"]["plugin"] == "undo"
    assert "calc.py (restored)" in note["data"]["content"][0]["text"]
    assert done["data"]["ok"] is True
    assert done["data"]["text"] == "\n".join(response.json()["lines"])
    again = http.post(f"/api/sessions/{sid}/undo", json={}).json()  # that turn stays undone
    assert again["lines"] == [NOTHING_TO_UNDO] and again["logged"] is False


def test_a_dry_run_says_what_it_would_undo_and_changes_nothing(
    http: httpx.Client, edit_env: WebEnv
) -> None:
    sid = new_session(http)
    run_turn(http, sid)
    log = edit_env.store.log_path(sid).read_bytes()
    response = http.post(f"/api/sessions/{sid}/undo", json={"dryRun": True})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ok"] is True and body["dryRun"] is True and body["logged"] is False
    assert body["lines"][1:] == ["  would restore calc.py"]
    assert body["lines"][0].startswith("Would undo turn ")
    assert (edit_env.workspace / "calc.py").read_text() == AFTER
    assert edit_env.store.log_path(sid).read_bytes() == log


def test_nothing_to_undo_is_said_and_logs_nothing(http: httpx.Client, edit_env: WebEnv) -> None:
    """In a new session (not written to the store: it stays so) and in a stored one without a
    turn (its log stays as it was)."""
    sid = new_session(http)
    response = http.post(f"/api/sessions/{sid}/undo")
    assert response.status_code == 200
    assert response.json()["lines"] == [NOTHING_TO_UNDO]
    assert not edit_env.store.log_path(sid).exists()
    with Session.create(edit_env.store, cwd=edit_env.workspace) as stored:
        sid = stored.id
    assert http.post(f"/api/sessions/{sid}/resume").status_code == 200
    log = edit_env.store.log_path(sid).read_bytes()
    response = http.post(f"/api/sessions/{sid}/undo")
    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "lines": [NOTHING_TO_UNDO],
        "turn": None,
        "dryRun": False,
        "logged": False,
    }
    assert edit_env.store.log_path(sid).read_bytes() == log


def test_undo_while_a_turn_runs_is_refused_as_busy_like_a_prompt(tmp_path: Path) -> None:
    """The turn waits for its approval, so it is surely running when the undo comes."""
    env = make_env(tmp_path, approval="ask")
    (env.workspace / "calc.py").write_text(BEFORE)
    env.script = list(EDIT_TURN)
    with (
        BackgroundServer(env.app()) as server,
        httpx.Client(base_url=server.base_url, headers=AUTH, timeout=30) as http,
    ):
        sid = new_session(http)
        assert http.post(f"/api/sessions/{sid}/prompt", json={"text": "fix"}).status_code == 202
        approvals = wait_until(lambda: info(http, sid)["approvals"], 30, "the approval")
        busy_undo = http.post(f"/api/sessions/{sid}/undo", json={})
        busy_prompt = http.post(f"/api/sessions/{sid}/prompt", json={"text": "again"})
        assert error(busy_undo) == error(busy_prompt) == (409, "SESSION_BUSY")
        assert busy_undo.json()["error"]["running"] == "turn"
        assert busy_undo.json()["error"]["message"] == busy_prompt.json()["error"]["message"]
        types = log_types(env, sid)
        answer = {"answer": "once"}
        assert (
            http.post(
                f"/api/sessions/{sid}/approvals/{approvals[0]['id']}", json=answer
            ).status_code
            == 200
        )
        wait_until(lambda: info(http, sid)["running"] is None, 30, "the turn to end")
        assert "command/run" not in types and "command/run" not in log_types(env, sid)
        assert (env.workspace / "calc.py").read_text() == AFTER  # the busy undo did nothing


def test_undo_of_a_session_not_open_here_or_unknown_gives_the_usual_errors(
    http: httpx.Client, edit_env: WebEnv
) -> None:
    stored = Session.create(edit_env.store, cwd=edit_env.workspace)
    stored.close()
    not_open = http.post(f"/api/sessions/{stored.id}/undo", json={})
    assert error(not_open) == (409, "SESSION_NOT_OPEN")
    unknown = http.post("/api/sessions/20990101-000000-000-abcdef/undo", json={})
    assert error(unknown) == (404, "SESSION_NOT_FOUND")
    assert error(http.post("/api/sessions/a..b/undo", json={})) == (400, "INVALID_ARGUMENT")


@pytest.mark.parametrize(
    "body", [{"dryRun": "yes"}, {"dry_run": True}, {"focus": "x"}, [], "--dry-run"]
)
def test_undo_refuses_a_bad_body(http: httpx.Client, body: Any) -> None:
    sid = new_session(http)
    assert error(http.post(f"/api/sessions/{sid}/undo", json=body)) == (400, "INVALID_ARGUMENT")
