"""The API's error messages are what the page shows (its error toast, a panel's status line),
so each is one line as ``dsh.errors.error_line`` makes it: an error's text (2,000 characters
with a newline and terminal escapes, here) as its one bounded, escaped line, and the whole
message at most ``API_MESSAGE_CHARS`` whatever a route quoted from the request. Over a real
server on 127.0.0.1; a log that does not load is left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import msgspec

from dsh.web import BackgroundServer
from dsh.web.bodies import CreateBody
from dsh.web.errors import API_MESSAGE_CHARS
from tests.hostile_errors import HOSTILE, assert_shown_as_error_line, unopenable_session
from tests.web.conftest import AUTH, make_env


def test_a_session_that_does_not_load_is_answered_on_one_bounded_line(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    session_id, text = unopenable_session(env.store, env.workspace)
    stored = env.store.log_path(session_id).read_bytes()
    with (
        BackgroundServer(env.app()) as server,
        httpx.Client(base_url=server.base_url, headers=AUTH) as client,
    ):
        read = client.get(f"/api/sessions/{session_id}/history")
        resumed = client.post(f"/api/sessions/{session_id}/resume", json={})
    for response in (read, resumed):
        assert response.status_code == 500
        error = response.json()["error"]
        assert error["code"] == "LOG_CORRUPT"
        assert_shown_as_error_line(error["message"], text)
    assert env.store.log_path(session_id).read_bytes() == stored  # the log is left as it was


def test_a_request_bodys_error_is_answered_on_one_bounded_line(tmp_path: Path) -> None:
    body = json.dumps({HOSTILE: 1}).encode()
    try:
        msgspec.json.decode(body, type=CreateBody)
    except msgspec.ValidationError as exc:
        text = str(exc)  # what the decoder says: it names the field as it was sent
    assert "\x1b[31m" in text and "\n" in text
    env = make_env(tmp_path)
    with (
        BackgroundServer(env.app()) as server,
        httpx.Client(base_url=server.base_url, headers=AUTH) as client,
    ):
        response = client.post(
            "/api/sessions", content=body, headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "INVALID_ARGUMENT"
    assert_shown_as_error_line(error["message"], text, "invalid request body: ")


def test_what_a_route_quotes_from_the_request_stays_within_the_bound(tmp_path: Path) -> None:
    cwd = f"/no/such/{HOSTILE}"
    env = make_env(tmp_path)
    with (
        BackgroundServer(env.app()) as server,
        httpx.Client(base_url=server.base_url, headers=AUTH) as client,
    ):
        response = client.post("/api/sessions", json={"cwd": cwd})
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert message.startswith("cwd must be an existing absolute directory, not '/no/such/")
    assert len(message) == API_MESSAGE_CHARS and message.endswith("…")
    assert "\n" not in message and "\x1b" not in message
