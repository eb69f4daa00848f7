"""The context window of an OpenAI-compatible server: asked once, config wins, logged."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dsh.errors import ConfigError
from dsh.llm import window as window_module
from dsh.llm.window import Discovered, Unreachable, discover_window, served_models
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer, json_ok, openai_text

DSH = str(Path(sys.executable).with_name("dsh"))


def test_llama_cpp_props_give_the_slot_window(server: FakeServer):  # noqa: F811
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 4096}})
    found = discover_window(server.url + "/v1", "qwen")
    assert found == Discovered(4096, "llama.cpp /props")
    assert [r.path for r in server.fixed_requests] == ["/props"]


def test_vllm_models_give_max_model_len_of_the_named_model(server: FakeServer):  # noqa: F811
    server.fixed["/v1/models"] = json_ok(
        {"data": [{"id": "other", "max_model_len": 9}, {"id": "m", "max_model_len": 32768}]}
    )
    assert discover_window(server.url + "/v1", "m") == Discovered(32768, "vLLM /v1/models")


def test_ollama_show_prefers_num_ctx_over_the_trained_length(server: FakeServer):  # noqa: F811
    server.fixed["/v1/models"] = json_ok({"data": [{"id": "q:0.5b", "owned_by": "library"}]})
    server.fixed["/api/show"] = json_ok(
        {
            "parameters": "stop <|im_end|>\nnum_ctx 8192",
            "model_info": {"qwen2.context_length": 32768},
        }
    )
    assert discover_window(server.url + "/v1", "q:0.5b") == Discovered(
        8192, "Ollama /api/show num_ctx"
    )
    assert server.fixed_requests[-1].body == {"model": "q:0.5b"}
    assert server.requests == []  # the model queue is untouched


def test_ollama_without_num_ctx_gives_the_models_context_length(server: FakeServer):  # noqa: F811
    server.fixed["/v1/models"] = json_ok({"data": [{"id": "q", "owned_by": "library"}]})
    server.fixed["/api/show"] = json_ok({"model_info": {"qwen2.context_length": 32768}})
    assert discover_window(server.url + "/v1", "q") == Discovered(
        32768, "Ollama /api/show context_length"
    )


def test_a_server_that_tells_nothing_is_asked_once(server: FakeServer):  # noqa: F811
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": "big"}})
    server.fixed["/v1/models"] = json_ok({"data": [{"id": "a"}, {"id": "b"}]})
    url = server.url + "/v1"
    assert discover_window(url, "m") is None
    assert discover_window(url, "m") is None
    assert [r.path for r in server.fixed_requests] == ["/props", "/v1/models"]


def test_a_base_url_with_credentials_is_asked_with_basic_auth(server: FakeServer):  # noqa: F811
    """``http://user:secret@host/v1`` (a server behind basic auth) was refused by urllib as a
    URL, so such a server looked silent and the session ran on the 128k default."""
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 4096}})
    url = server.url.replace("http://", "http://user:secret@") + "/v1"
    assert discover_window(url, "qwen") == Discovered(4096, "llama.cpp /props")
    (asked,) = server.fixed_requests
    assert asked.headers["authorization"] == "Basic " + base64.b64encode(b"user:secret").decode()


def test_an_oversized_or_failing_answer_tells_nothing(server: FakeServer):  # noqa: F811
    huge = json.dumps({"default_generation_settings": {"n_ctx": 4096}, "pad": "x" * 1_100_000})
    server.fixed["/props"] = Canned(200, {"Content-Type": "application/json"}, (huge.encode(),))
    server.fixed["/v1/models"] = Canned(500, {"Content-Length": "2"}, (b"{}",))
    assert discover_window(server.url + "/v1", "m") is None
    assert [r.path for r in server.fixed_requests] == ["/props", "/v1/models"]


def run_dsh(
    tmp_path: Path, url: str, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    command = [DSH, "run", "--provider", "openai-compatible", "--base-url", url, "--model", "m"]
    return subprocess.run(
        [*command, "--json", *args],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=check,
    )  # fmt: skip


def context_windows(stdout: str) -> list[int]:
    events = [json.loads(line) for line in stdout.splitlines()]
    return [e["data"]["contextWindow"] for e in events if e["type"] == "request/context"]


def test_dsh_run_logs_the_discovered_window_and_asks_once(tmp_path, server: FakeServer):  # noqa: F811
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 8192}})
    server.queue(openai_text("one"), openai_text("two"))
    result = run_dsh(tmp_path, server.url + "/v1", "first", "second")
    assert context_windows(result.stdout) == [8192]
    assert [r.path for r in server.fixed_requests] == ["/props"]
    assert "does not report its context window" not in result.stderr
    # the default budgets scale to the window the server reported: nothing to warn about
    assert "too small for these compaction budgets" not in result.stderr
    settings = [json.loads(line) for line in result.stdout.splitlines()]
    (recorded,) = [e["data"]["compaction"] for e in settings if e["type"] == "session/settings"]
    assert (recorded["chunkTokens"], recorded["stubTokens"], recorded["stateMaxTokens"]) == (
        1024,
        81,
        409,
    )


def test_a_set_budget_too_large_for_the_reported_window_is_said_once(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 4096}})
    server.queue(openai_text("one"), openai_text("two"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text("[compaction]\nstate_max_tokens = 4096\n")
    result = run_dsh(tmp_path, server.url + "/v1", "first", "second")
    # a state of 4,096 tokens cannot compact in 4,096: said once, the run still goes on
    assert result.stderr.count("too small for these compaction budgets") == 1


def test_the_flag_wins_and_nothing_is_asked(tmp_path, server: FakeServer):  # noqa: F811
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 2048}})
    server.queue(openai_text("one"))
    result = run_dsh(tmp_path, server.url + "/v1", "--context-window", "30000", "hi")
    assert context_windows(result.stdout) == [30000] and server.fixed_requests == []


def test_a_silent_server_keeps_the_default_and_says_so_once(tmp_path, server: FakeServer):  # noqa: F811
    server.queue(openai_text("one"), openai_text("two"))
    result = run_dsh(tmp_path, server.url + "/v1", "first", "second")
    assert context_windows(result.stdout) == [128_000]
    assert result.stderr.count("does not report its context window; assuming 128,000") == 1


def _route_on(server: FakeServer, n_ctx: int, **compaction: object):  # noqa: F811
    from dsh.agent.runtime import resolve_route
    from dsh.config import load_settings

    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": n_ctx}})
    overrides = {
        "provider": {"name": "openai-compatible", "base_url": server.url + "/v1", "model": "m"},
        "compaction": dict(compaction),
    }
    settings = load_settings(overrides=overrides, environ={}, cwd=Path("/nonexistent"))
    return resolve_route(settings, environ={})


def test_a_reported_window_too_small_for_the_budgets_is_said_once_not_refused(
    server: FakeServer,  # noqa: F811
):
    route = _route_on(server, 4096, state_max_tokens=4096)  # a state that alone fills it
    assert route.context_window == 4096
    assert route.notice is not None
    assert "4,096-token context window" in route.notice
    assert "compaction.state_max_tokens" in route.notice


def test_a_reported_window_the_budgets_fit_says_nothing(server: FakeServer):  # noqa: F811
    assert _route_on(server, 32768).notice is None
    assert _route_on(server, 4096, state_max_tokens=1000).notice is None
    assert _route_on(server, 4096).notice is None  # unset budgets scale to the window


def test_a_reported_window_under_the_bound_is_refused_in_one_line(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """``llama-server -c 2048``: dsh's own system prompt and tools take most of it. Assuming
    another window (as dsh once did, 128,000) sent requests the server could not take; the
    run is refused at start instead, before any request and without a session."""
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 2048}})
    server.queue(openai_text("one"))
    result = run_dsh(tmp_path, server.url + "/v1", "first", check=False)
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"dsh: error: {server.url}/v1 reports a 2,048-token context window for m "
        "(llama.cpp /props); dsh needs at least 4,096: give the model a larger one on the "
        "server (llama-server -c, Ollama's num_ctx, vLLM's --max-model-len)"
    ]
    assert server.requests == []  # no model call went out
    assert not list((tmp_path / "home").rglob("*.jsonl"))  # no session


def test_a_models_list_reporting_a_window_under_the_bound_is_refused(server: FakeServer):  # noqa: F811
    from dsh.agent.runtime import resolve_route
    from dsh.config import load_settings

    server.fixed["/v1/models"] = json_ok({"data": [{"id": "m", "max_model_len": 4095}]})
    overrides = {
        "provider": {"name": "openai-compatible", "base_url": server.url + "/v1", "model": "m"}
    }
    settings = load_settings(overrides=overrides, environ={}, cwd=Path("/nonexistent"))
    with pytest.raises(ConfigError) as refused:
        resolve_route(settings, environ={})
    message = str(refused.value)
    assert "reports a 4,095-token context window" in message and "(vLLM /v1/models)" in message
    assert "\n" not in message
    server.fixed["/v1/models"] = json_ok({"data": [{"id": "m", "max_model_len": 4096}]})
    window_module._CACHE.clear()
    assert resolve_route(settings, environ={}).context_window == 4096  # the bound itself


def _free_port() -> int:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_server_that_cannot_be_reached_is_unreachable_after_one_attempt(monkeypatch):
    asked: list[str] = []
    real = window_module._get_json

    def spy(url: str, headers: dict[str, str], **kwargs: object) -> object:
        asked.append(url)
        return real(url, headers, **kwargs)

    monkeypatch.setattr(window_module, "_get_json", spy)
    url = f"http://127.0.0.1:{_free_port()}/v1"
    assert discover_window(url, "m") == Unreachable("connection refused")
    assert asked == [url.removesuffix("/v1") + "/props"]  # /v1/models is not tried as well
    assert served_models(url) == Unreachable("connection refused")


def test_an_unreachable_server_is_asked_again_the_next_time():
    """It may have started since: "unreachable" is not cached as "says nothing" is."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    assert isinstance(discover_window(url, "m"), Unreachable)
    with _llama_server(port, n_ctx=4096):  # the server now answers on that port
        assert discover_window(url, "m") == Discovered(4096, "llama.cpp /props")


@contextlib.contextmanager
def _llama_server(port: int, *, n_ctx: int) -> Iterator[None]:
    """A server on ``port`` answering ``GET /props`` as llama.cpp does."""
    body = json.dumps({"default_generation_settings": {"n_ctx": n_ctx}}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/props" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_dsh_run_says_the_server_could_not_be_reached_not_that_it_is_silent(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/v1"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [DSH, "run", "--base-url", url, "--model", "m", "--json", "hi"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "does not report its context window" not in result.stderr
    assert result.stderr.splitlines()[0] == (
        f"dsh: warning: {url} could not be reached (connection refused) to ask its context "
        "window; assuming 128,000 tokens (set provider.context_window or --context-window)"
    )
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [event["type"] for event in events]
    assert "llm/retry" not in types  # one attempt, no back-off: the error comes at once
    (error,) = [event["data"] for event in events if event["type"] == "request/error"]
    assert (error["code"], error["retryable"]) == ("CONNECTION", False)


def test_every_question_says_dsh_as_its_user_agent_not_httpx(server: FakeServer):  # noqa: F811
    """The docs say dsh identifies itself as ``dsh/<version>``; the window questions and the
    models list went out as ``python-httpx/<version>``."""
    from dsh.llm.sdk_environment import dsh_user_agent

    server.fixed["/v1/models"] = json_ok({"data": [{"id": "q", "owned_by": "library"}]})
    server.fixed["/api/show"] = json_ok({"model_info": {"qwen2.context_length": 32768}})
    assert served_models(server.url + "/v1").models == ("q",)
    assert discover_window(server.url + "/v1", "q") is not None
    paths = [r.path for r in server.fixed_requests]
    assert paths == ["/v1/models", "/props", "/v1/models", "/api/show"]
    agents = {r.headers.get("user-agent") for r in server.fixed_requests}
    assert agents == {dsh_user_agent()} and dsh_user_agent().startswith("dsh/")
    window_module._CACHE.clear()
    own = {"User-Agent": "gateway-client/1"}  # the user's provider.headers win
    assert served_models(server.url + "/v1", headers=own).models == ("q",)
    assert server.fixed_requests[-1].headers["user-agent"] == "gateway-client/1"


def test_a_reported_window_over_the_ceiling_is_ignored_with_a_notice(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """A server reporting ``n_ctx: 1000000000000`` was believed and recorded, so the
    compaction threshold was out of reach: it is ignored as a silent server is, said once."""
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 10**12}})
    server.queue(openai_text("one"), openai_text("two"))
    result = run_dsh(tmp_path, server.url + "/v1", "first", "second")
    assert context_windows(result.stdout) == [128_000]
    notice = (
        f"{server.url}/v1 reports a 1,000,000,000,000-token context window for m "
        "(llama.cpp /props), more than any model has (at most 16,777,216): ignored; "
        "assuming 128,000 tokens (set provider.context_window or --context-window)"
    )
    assert [line for line in result.stderr.splitlines() if "1,000,000,000,000" in line] == [
        f"dsh: warning: {notice}"
    ]
    window_module._CACHE.clear()
    route = _route_on(server, 16_777_216)  # the bound itself is believed
    assert (route.context_window, route.window_from, route.notice) == (16_777_216, "server", None)


@pytest.mark.parametrize("where", ["config", "flag", "environment"])
def test_a_set_window_over_the_ceiling_is_refused_naming_the_key(
    tmp_path,
    where: str,
    server: FakeServer,  # noqa: F811
):
    (tmp_path / "home").mkdir()
    config = tmp_path / "home" / "config.toml"
    huge = "99999999999999999999"
    args: list[str] = []
    if where == "config":
        config.write_text(f"[provider]\ncontext_window = {huge}\n")
    elif where == "flag":
        args = ["--context-window", huge]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    if where == "environment":
        env["DSH_PROVIDER_CONTEXT_WINDOW"] = huge
    command = [DSH, "run", "--provider", "openai-compatible", "--base-url", server.url + "/v1"]
    result = subprocess.run(
        [*command, "--model", "m", "--json", *args, "hi"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    origin = {
        "config": str(config),
        "flag": "command line",
        "environment": "environment variable DSH_PROVIDER_CONTEXT_WINDOW",
    }[where]
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "dsh: error: config key provider.context_window must be at most 16777216 "
        f"(no model has a larger window) (set in {origin})"
    ]
    assert server.requests == [] and server.fixed_requests == []
