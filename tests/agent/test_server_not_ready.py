"""A server still loading its model (llama-server answers every route 503 "Loading model"):
its window and its model list are waited for, never taken as "it reports none"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.agent.runtime import resolve_route
from dsh.config import load_settings
from dsh.errors import ConfigError
from dsh.llm import window as window_module
from dsh.llm.window import Discovered, NotReady, discover_window
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer, json_ok, openai_text

LOADED = b'{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}'
LOADING = Canned(503, {"Content-Type": "application/json"}, (LOADED,))
"""llama-server's answer while it loads its model (a real one's body, byte for byte)."""


def _settings(server: FakeServer, model: str | None = "m"):  # noqa: F811
    provider = {"name": "openai-compatible", "base_url": server.url + "/v1"}
    if model is not None:
        provider["model"] = model
    return load_settings(overrides={"provider": provider}, environ={}, cwd=Path("/nonexistent"))


def _loads_after(
    server: FakeServer,  # noqa: F811
    pauses: int,
    monkeypatch: pytest.MonkeyPatch,
    **ready: Canned,
) -> list[float]:
    """Every route answers 503 until ``pauses`` pauses were waited, then ``ready`` (by path);
    the pauses are counted, not slept."""
    slept: list[float] = []

    def pause(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == pauses:
            server.fixed.clear()
            server.fixed.update({"/" + k.replace("_", "/"): v for k, v in ready.items()})

    for path in ("/props", "/v1/models"):
        server.fixed[path] = LOADING
    monkeypatch.setattr(window_module, "_sleep", pause)
    return slept


def test_the_window_is_asked_again_until_the_model_has_loaded(server, monkeypatch):  # noqa: F811
    slept = _loads_after(
        server, 3, monkeypatch, props=json_ok({"default_generation_settings": {"n_ctx": 8192}})
    )
    told: list[str] = []
    found = discover_window(server.url + "/v1", "m", waiting=told.append)
    assert found == Discovered(8192, "llama.cpp /props")
    assert slept == [0.5, 1.0, 2.0]  # doubling pauses
    (line,) = told  # said once, not once per pause
    assert "the server answered 503 (Loading model)" in line and "waiting up to 60 s" in line


def test_a_route_waits_and_records_the_real_window_not_the_default(server, monkeypatch):  # noqa: F811
    _loads_after(
        server, 2, monkeypatch, props=json_ok({"default_generation_settings": {"n_ctx": 8192}})
    )
    told: list[str] = []
    route = resolve_route(_settings(server), environ={}, waiting=told.append)
    assert (route.context_window, route.window_from, route.notice) == (8192, "server", None)
    assert len(told) == 1


def test_a_server_never_ready_is_refused_in_one_line_not_assumed_128k(server, monkeypatch):  # noqa: F811
    slept = _loads_after(server, 10_000, monkeypatch)
    with pytest.raises(ConfigError) as refused:
        resolve_route(_settings(server), environ={})
    message = str(refused.value)
    assert "is not ready: the server answered 503 (Loading model) for 60 s" in message
    assert "128,000" not in message and "\n" not in message
    assert sum(slept) == 60 and max(slept) == 8
    assert isinstance(discover_window(server.url + "/v1", "m"), NotReady)  # not cached as None


def test_without_a_model_the_list_is_waited_for_too(server, monkeypatch):  # noqa: F811
    models = json_ok({"data": [{"id": "qwen", "object": "model"}]})
    props = json_ok({"default_generation_settings": {"n_ctx": 8192}})
    _loads_after(server, 1, monkeypatch, v1_models=models, props=props)
    told: list[str] = []
    route = resolve_route(_settings(server, None), environ={}, waiting=told.append)
    assert (route.model, route.context_window) == ("qwen", 8192)
    assert len(told) == 1


def test_without_a_model_a_server_never_ready_says_so(server, monkeypatch):  # noqa: F811
    _loads_after(server, 10_000, monkeypatch)
    with pytest.raises(ConfigError) as refused:
        resolve_route(_settings(server, None), environ={})
    assert "503 (Loading model)" in str(refused.value)
    assert "lists no model" not in str(refused.value)


def test_a_models_list_answering_an_error_status_says_the_status(server):  # noqa: F811
    page = b"<html>502 Bad Gateway</html>"
    server.fixed["/v1/models"] = Canned(502, {"Content-Type": "text/html"}, (page,))
    with pytest.raises(ConfigError) as refused:
        resolve_route(_settings(server, None), environ={})
    message = str(refused.value)
    assert "could not be asked which it serves (the server answered 502)" in message
    assert "lists no model" not in message and "Bad Gateway" not in message


def test_a_503_page_that_is_not_a_short_message_is_not_repeated(server, monkeypatch):  # noqa: F811
    page = json.dumps({"error": {"message": "x" * 500}}).encode()
    _loads_after(server, 10_000, monkeypatch)
    server.fixed["/props"] = Canned(503, {"Content-Type": "application/json"}, (page,))
    found = discover_window(server.url + "/v1", "m")
    assert found == NotReady("the server answered 503")


def test_dsh_run_says_it_waits_once_then_runs_in_the_window_reported_after_loading(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """The real command, real pauses: the server answers 503 until the test has seen dsh ask
    (a condition waited for, not a timer), then reports 8,192 tokens."""
    import os
    import subprocess
    import sys
    import threading
    import time

    server.fixed["/props"] = LOADING
    server.queue(openai_text("hello"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    dsh = str(Path(sys.executable).with_name("dsh"))
    command = [dsh, "run", "--base-url", server.url + "/v1", "--model", "m", "--json", "hi"]

    def load_once_asked() -> None:
        deadline = time.monotonic() + 120
        while not server.fixed_requests and time.monotonic() < deadline:
            time.sleep(0.01)
        server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 8192}})

    loader = threading.Thread(target=load_once_asked, daemon=True)
    loader.start()
    result = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True
    )
    loader.join()
    events = [json.loads(line) for line in result.stdout.splitlines()]
    windows = [e["data"]["contextWindow"] for e in events if e["type"] == "request/context"]
    assert windows == [8192]
    assert result.stderr.count("the server answered 503 (Loading model); waiting up to 60 s") == 1
    assert "assuming 128,000" not in result.stderr
