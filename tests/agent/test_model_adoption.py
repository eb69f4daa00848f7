"""A route on a server that names no model (``dsh.agent.runtime``): the one model the server
lists is used, said once, requested and recorded by its real name; a server listing several,
none, or not reached stops the command in one line naming every way to give a model (real
``dsh`` processes, a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_error, json_ok, openai_text

DSH = str(Path(sys.executable).with_name("dsh"))
WAYS = "pass --model, or set DSH_PROVIDER_MODEL or provider.model"


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    return subprocess.run(
        [DSH, "run", *args],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def events(result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def of_type(all_events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event["data"] for event in all_events if event["type"] == kind]


def session_files(tmp_path: Path) -> list[Path]:
    sessions = tmp_path / "home" / "sessions"
    return sorted(sessions.rglob("*")) if sessions.exists() else []


def test_the_one_model_a_server_lists_is_used_said_once_and_recorded(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.fixed["/v1/models"] = json_ok({"data": [{"id": "qwen-one", "max_model_len": 8192}]})
    server.queue(openai_text("one"), openai_text("two"))
    url = server.url + "/v1"
    result = run(tmp_path, "--base-url", url, "--json", "first", "second")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"dsh: warning: no model given: using qwen-one, the one model {url} serves (choose "
        "another with --model or provider.model)"
    ]
    assert [body["model"] for body in server.bodies] == ["qwen-one", "qwen-one"]
    logged = events(result)
    (recorded,) = of_type(logged, "session/settings")
    assert recorded["model"] == "qwen-one"
    (header,) = of_type(logged, "request/header")
    assert header["header"]["config"]["model"] == "qwen-one"
    (route,) = of_type(logged, "request/context")
    assert (route["model"], route["contextWindow"]) == ("qwen-one", 8192)  # vLLM's max_model_len
    # the list is asked once: the window probe reuses it after llama.cpp's /props said nothing
    assert [r.path for r in server.fixed_requests] == ["/v1/models", "/props"]


def test_a_server_listing_its_one_model_twice_serves_one_model(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """A server listed ``m`` twice and was refused as serving "2 models: m, m"."""
    listed = [{"id": "qwen-one", "max_model_len": 8192}, {"id": "qwen-one"}]
    server.fixed["/v1/models"] = json_ok({"data": listed})
    server.queue(openai_text("one"))
    url = server.url + "/v1"
    result = run(tmp_path, "--base-url", url, "first")
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if not line.startswith("session: ")]
    assert said == [
        f"dsh: warning: no model given: using qwen-one, the one model {url} serves (choose "
        "another with --model or provider.model)"
    ]
    assert [body["model"] for body in server.bodies] == ["qwen-one"]


def test_a_reopened_session_keeps_its_recorded_model_and_the_window_reported_for_it(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """The server now lists other models: the session was run with qwen-one and stays on it
    (no model is adopted again). Its window, the server's, is asked again (docs/local-models.md,
    "The window is asked, not assumed"); the server no longer says it for qwen-one, so the
    session keeps the 8,192 it reported, not the 128,000 a new session would assume."""
    server.fixed["/v1/models"] = json_ok({"data": [{"id": "qwen-one", "max_model_len": 8192}]})
    server.queue(openai_text("one"), openai_text("two"))
    url = server.url + "/v1"
    first = run(tmp_path, "--base-url", url, "--json", "first")
    session = json.loads(first.stdout.splitlines()[0])["session"]
    server.fixed["/v1/models"] = json_ok({"data": [{"id": "a"}, {"id": "b"}]})
    asked = len(server.fixed_requests)
    again = run(tmp_path, "--session", session, "--json", "again")
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines() == [
        f"dsh: warning: {url} does not report its context window; keeping the 8,192 tokens the "
        "session recorded from it (set provider.context_window or --context-window to choose "
        "another)"
    ]
    assert server.bodies[-1]["model"] == "qwen-one"
    assert server.bodies[-1]["max_tokens"] == server.bodies[0]["max_tokens"]  # the same window
    assert [r.path for r in server.fixed_requests[asked:]] == ["/props", "/v1/models"]
    assert of_type(events(again), "session/settings") == []  # nothing changed: nothing logged


def test_a_server_listing_several_models_stops_the_run_naming_them(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    names = ["qwen2.5:0.5b", "qwen2.5:1.5b", "llama3.2:1b", "phi4", "gemma3:1b", "smollm2", "x"]
    server.fixed["/v1/models"] = json_ok(
        {"data": [{"id": n, "owned_by": "library"} for n in names]}
    )
    url = server.url + "/v1"
    result = run(tmp_path, "--base-url", url, "hi")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"dsh: error: provider 'openai-compatible' needs a model: {WAYS}; {url} serves 7 models: "
        "qwen2.5:0.5b, qwen2.5:1.5b, llama3.2:1b, phi4, gemma3:1b and 2 more"
    ]
    assert server.requests == [] and session_files(tmp_path) == []


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (json_ok({"data": []}), "lists no model at /v1/models"),
        (json_ok({"object": "x"}), "lists no model at /v1/models"),
        # an error status is said as one, not as an empty list (a proxy whose server is down)
        (
            json_error(404, {"error": "not found"}),
            "could not be asked which it serves (the server answered 404)",
        ),
    ],
)
def test_a_server_listing_no_model_stops_the_run_naming_every_way_to_give_one(
    tmp_path,
    server: FakeServer,  # noqa: F811
    answer,
    why,
):
    server.fixed["/v1/models"] = answer
    url = server.url + "/v1"
    result = run(tmp_path, "--base-url", url, "hi")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"dsh: error: provider 'openai-compatible' needs a model: {WAYS}; {url} {why}"
    ]
    assert session_files(tmp_path) == []


def test_a_server_that_cannot_be_reached_stops_the_run_saying_so(tmp_path):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    result = run(tmp_path, "--base-url", url, "hi")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"dsh: error: provider 'openai-compatible' needs a model: {WAYS}; {url} could not be "
        "asked which it serves (connection refused)"
    ]
    assert session_files(tmp_path) == []


def test_a_configured_model_is_used_and_the_list_is_not_asked(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 4096}})
    server.fixed["/v1/models"] = json_ok({"data": [{"id": "qwen-one"}]})
    server.queue(openai_text("one"))
    result = run(tmp_path, "--base-url", server.url + "/v1", "--model", "mine", "hi")
    assert result.returncode == 0, result.stderr
    assert server.bodies[0]["model"] == "mine"
    assert [r.path for r in server.fixed_requests] == ["/props"]
