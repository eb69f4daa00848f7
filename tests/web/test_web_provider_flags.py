"""``dsh web`` takes the provider flags ``dsh`` and ``dsh run`` take (``--provider``,
``--model``, ``--base-url``, ``--script``, and ``dsh run``'s ``--context-window``): a session
started from the page runs on that route, and a session continued from it too, the flags
overriding the route it recorded (said once on stderr, logged in its settings), as
``dsh run --session`` does. A bad ``--base-url`` is refused in one line before the server starts.

Real processes: ``dsh web`` and ``dsh run``, and a stand-in OpenAI-compatible server on
127.0.0.1 (``FakeServer``) that must receive the model call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from dsh.store import JsonlStore
from tests.helpers import run_session_id
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_text
from tests.web.real_command import DshWeb, dsh_web_process

DSH = str(Path(sys.executable).with_name("dsh"))
REPLY = "hello from the local model"


def local_server(server: FakeServer) -> str:  # noqa: F811
    """The fake server as a llama.cpp one (``/props`` tells its window), answering one model
    call; its ``/v1`` URL."""
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 32_768}})
    server.queue(openai_text(REPLY))
    return f"{server.url}/v1"


def prompt_and_wait(web: DshWeb, session_id: str, text: str) -> dict[str, Any]:
    """Send ``text`` as the page does and wait for the session to be idle; its info."""
    auth = {"Authorization": f"Bearer {web.token}"}
    with httpx.Client(base_url=web.base, headers=auth, timeout=60) as http:
        started = http.post(f"/api/sessions/{session_id}/prompt", json={"text": text})
        assert started.status_code == 202, started.text
        give_up = time.monotonic() + 120
        while True:
            info: dict[str, Any] = http.get(f"/api/sessions/{session_id}").json()
            if info["running"] is None:
                return info
            assert time.monotonic() < give_up, info
            time.sleep(0.05)


def events_of(home: Path, session_id: str) -> list[dict[str, Any]]:
    path = JsonlStore(home).log_path(session_id)
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def recorded_settings(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == "session/settings"]


def answers(events: list[dict[str, Any]]) -> list[str]:
    return [
        e["data"]["message"]["content"][0]["text"]
        for e in events
        if e["type"] == "assistant/message"
    ]


def test_a_session_started_from_the_page_calls_the_base_url_given_to_dsh_web(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    url = local_server(server)
    flags = ("--base-url", url, "--model", "qwen-local", "--context-window", "16000")
    with dsh_web_process(tmp_path, flags) as web:
        auth = {"Authorization": f"Bearer {web.token}"}
        with httpx.Client(base_url=web.base, headers=auth, timeout=60) as http:
            made = http.post("/api/sessions", json={"cwd": str(tmp_path)})
            assert made.status_code == 201, made.text
            session_id = made.json()["session"]["id"]
        info = prompt_and_wait(web, session_id, "say hello")
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]
    body = server.requests[0].body
    assert body["model"] == "qwen-local"
    assert body["messages"][-1]["content"] == "say hello"
    assert info["stats"]["contextWindow"] == 16_000
    events = events_of(tmp_path / "home", session_id)
    assert answers(events) == [REPLY]
    [settings] = recorded_settings(events)
    assert (settings["provider"], settings["model"]) == ("openai-compatible", "qwen-local")
    assert settings["baseUrl"] == url and settings["contextWindow"] == 16_000


def test_a_session_continued_from_the_page_moves_to_the_flags_route_and_says_so(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(home)
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "scripted answer"}]))
    first = subprocess.run(
        [DSH, "run", "--script", str(script), "remember the number 41"],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    session_id = run_session_id(first.stderr)
    url = local_server(server)
    with dsh_web_process(tmp_path, ("--base-url", url, "--model", "qwen-local")) as web:
        auth = {"Authorization": f"Bearer {web.token}"}
        with httpx.Client(base_url=web.base, headers=auth, timeout=60) as http:
            assert http.post(f"/api/sessions/{session_id}/resume").status_code == 200
        prompt_and_wait(web, session_id, "and add one")
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]
    sent = json.dumps(server.requests[0].body["messages"])
    assert "remember the number 41" in sent and "scripted answer" in sent  # continued
    events = events_of(home, session_id)
    assert answers(events) == ["scripted answer", REPLY]
    before, after = recorded_settings(events)
    assert before["provider"] == "scripted" and before.get("baseUrl") is None
    assert (after["provider"], after["model"], after["baseUrl"]) == (
        "openai-compatible",
        "qwen-local",
        url,
    )
    said = [
        line
        for line in web.stderr[0].splitlines()
        if "the flags change its recorded settings" in line
    ]
    assert said == [
        f"dsh: warning: session {session_id}: the flags change its recorded settings: "
        f"provider.name scripted -> openai-compatible; provider.model scripted -> qwen-local; "
        f"provider.base_url (none) -> {url}; with them: provider.context_window 128000 -> "
        "32768; compaction.state_max_tokens 4096 -> 1638"  # the new route's window, its state
    ], web.stderr[0]


def test_a_bad_base_url_is_refused_in_one_line_before_the_server_starts(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [DSH, "web", "--no-open", "--port", "0", "--base-url", "localhost:8080/v1"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""  # no URL: nothing was served
    assert result.stderr.splitlines() == [
        "dsh: error: Invalid value for '--base-url': must be an http:// or https:// URL with a "
        "host; 'localhost:8080/v1' has no scheme (did you mean 'http://localhost:8080/v1'?) "
        "(see `dsh web --help`)"
    ]
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.jsonl"))
