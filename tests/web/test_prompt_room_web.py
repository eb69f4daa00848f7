"""The web face refuses a prompt no request can carry as every face does (``dsh.agent.room``):
413 ``PROMPT_TOO_LARGE`` with the one line the other faces show, nothing logged, and the
session takes the next prompt (the one character limit: ``test_api``)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from starlette.testclient import TestClient

from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok
from tests.web.conftest import WebEnv, error_of, new_session, wait_idle
from tests.web.real_command import dsh_web_process


def _turns(client: TestClient, sid: str) -> list[dict]:
    events = client.get(f"/api/sessions/{sid}/history").json()["events"]
    return [e for e in events if e["type"] in ("turn/start", "user/message", "request/header")]


def test_a_prompt_the_window_cannot_hold_is_answered_413_and_nothing_is_logged(
    client: TestClient, env: WebEnv
) -> None:
    sid = new_session(client)
    response = client.post(f"/api/sessions/{sid}/prompt", json={"text": "z" * 30_000})
    assert error_of(response) == (413, "PROMPT_TOO_LARGE")
    message = response.json()["error"]["message"]
    assert message.startswith("the prompt is ~7.5k tokens; the 4,000-token context window")
    assert message.endswith(
        "beside the system prompt, tools and reply: shorten it or attach the file with @path"
    )
    assert _turns(client, sid) == []
    assert client.get(f"/api/sessions/{sid}").json()["running"] is None
    assert env.store.list() == []  # the new session is still a draft: nothing was written
    assert (
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"}).status_code == 202
    )
    wait_idle(client, sid)
    assert [e["type"] for e in _turns(client, sid)][:2] == ["turn/start", "user/message"]
    logged = env.log_lines(sid)
    again = client.post(f"/api/sessions/{sid}/prompt", json={"text": "z" * 30_000})
    assert error_of(again) == (413, "PROMPT_TOO_LARGE")
    assert env.log_lines(sid) == logged  # a stored session: not even its settings again


def test_dsh_web_says_at_start_that_its_window_leaves_no_room_and_the_prompt_is_refused(
    tmp_path: Path,
) -> None:
    """A long AGENTS.md in a 4,096-token window: the real ``dsh web`` says so as it starts
    (sessions can still be browsed), and a prompt from the page gets the same line, 503."""
    (tmp_path / "AGENTS.md").write_text("Rule: be careful. " * 700)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "never"}]))
    flags = ("--script", str(script), "--context-window", "4096")
    with (
        dsh_web_process(tmp_path, flags) as web,
        httpx.Client(
            base_url=web.base, headers={"Authorization": f"Bearer {web.token}"}, timeout=60
        ) as http,
    ):
        sid = http.post("/api/sessions", json={"cwd": str(tmp_path)}).json()["session"]["id"]
        response = http.post(f"/api/sessions/{sid}/prompt", json={"text": "hello"})
        assert error_of(response) == (503, "PROVIDER_NOT_CONFIGURED")
        refused = response.json()["error"]["message"]
    assert refused.startswith("the system prompt and tools take ~")
    warned = [line for line in web.stderr[0].splitlines() if "too many for a 4,096" in line]
    assert warned == [f"dsh: warning: {refused} — sessions can be browsed, but prompts will fail"]


def test_a_prompt_over_the_body_limit_is_refused_in_the_words_of_every_face(
    client: TestClient, env: WebEnv
) -> None:
    """A 1.2M-character paste went past the server's body limit and was answered "request body
    over 1000000 bytes", where the other faces say the prompt is too long and what to do."""
    sid = new_session(client)
    response = client.post(f"/api/sessions/{sid}/prompt", json={"text": "p" * 1_200_000})
    assert error_of(response) == (413, "PROMPT_TOO_LARGE")
    assert response.json()["error"]["message"] == (
        "the prompt is over 1,000,000 bytes; dsh takes at most 200,000 characters: "
        "shorten it or attach the file with @path"
    )
    assert env.store.list() == []


def test_a_short_prompt_whose_mention_attaches_too_much_is_answered_413(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """The real ``dsh web`` on a llama.cpp-like server (``-c 8192``) with a 6,000-token reply
    bound: ``summarise @big.log`` is a few tokens, the note its mention attaches ~2k. The
    files are read before the page is answered, so the page gets the 413 and keeps the draft;
    nothing is sent or logged."""
    (tmp_path / "big.log").write_text("".join(f"row {n}: {'v' * 60}\n" for n in range(400)))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text("[provider]\nmax_output_tokens = 6000\n")
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 8192}})
    flags = ("--base-url", server.url + "/v1", "--model", "m")
    with (
        dsh_web_process(tmp_path, flags) as web,
        httpx.Client(
            base_url=web.base, headers={"Authorization": f"Bearer {web.token}"}, timeout=60
        ) as http,
    ):
        sid = http.post("/api/sessions", json={"cwd": str(tmp_path)}).json()["session"]["id"]
        response = http.post(f"/api/sessions/{sid}/prompt", json={"text": "summarise @big.log"})
        assert error_of(response) == (413, "PROMPT_TOO_LARGE")
        message = response.json()["error"]["message"]
        assert message.startswith("the prompt and what it attaches (@big.log ~2.")
        assert message.endswith("shorten it or mention fewer or smaller files")
        history = http.get(f"/api/sessions/{sid}/history").json()["events"]
        assert [e for e in history if e["type"] in ("turn/start", "user/message")] == []
    assert server.requests == []  # no model call
    assert not list((tmp_path / "home").rglob("session.jsonl"))  # the draft stayed one
