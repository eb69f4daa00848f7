"""The window of a summariser on another model or server: its provider's known one or what its
server reports, asked once, set config winning, recorded with the session's settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.agent import session_settings as ss
from dsh.agent.runtime import resolve_route
from dsh.agent.wiring import wire
from dsh.compaction import ModelSummarizer, make_summarizer
from dsh.config import (
    MIN_CONTEXT_WINDOW,
    MIN_SUMMARIZER_WINDOW,
    CompactionSettings,
    Settings,
    load_settings,
)
from dsh.errors import ConfigError
from dsh.llm import window as window_module
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_text

DSH = str(Path(sys.executable).with_name("dsh"))


def _settings(tmp_path: Path, provider: dict, compaction: dict) -> Settings:
    overrides = {"provider": provider, "compaction": compaction}
    return load_settings(environ={"DSH_HOME": str(tmp_path)}, cwd=tmp_path, overrides=overrides)


def _local(url: str, **more: object) -> dict:
    return {"name": "openai-compatible", "base_url": url + "/v1", "model": "big", **more}


def _second_server(n_ctx: int) -> FakeServer:
    other = FakeServer().__enter__()
    other.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": n_ctx}})
    return other


def test_a_summariser_on_another_server_gets_the_window_that_server_reports(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    window_module._CACHE.clear()
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 32768}})
    other = _second_server(2048)
    try:
        settings = _settings(
            tmp_path,
            _local(server.url),
            {"summarizer": "small", "summarizer_base_url": other.url + "/v1"},
        )
        route = resolve_route(settings, environ={})
        assert (route.context_window, route.summarizer_window) == (32768, 2048)
        assert route.notice is None
        wiring = wire(settings, route, environ={})
        assert wiring.compaction.summarizer_context_window == 2048
        summarizer = make_summarizer(
            wiring.compaction,
            wiring.summarizer_provider,
            wiring.summarizer_model,
            history=[],
            max_output_tokens=None,
        )
        assert isinstance(summarizer, ModelSummarizer) and summarizer.context_window == 2048
        assert [r.path for r in other.fixed_requests] == ["/props"]
        recorded = ss.snapshot(
            settings, "openai-compatible", "big", 32768, "/w", summarizer_window=2048
        )
        assert recorded.compaction.summarizer_context_window == 2048
    finally:
        other.__exit__(None, None, None)


def test_a_model_on_the_same_ollama_server_is_asked_for_by_name(tmp_path, server: FakeServer):  # noqa: F811
    window_module._CACHE.clear()
    server.fixed["/v1/models"] = json_ok(
        {"data": [{"id": "big", "owned_by": "library"}, {"id": "small", "owned_by": "library"}]}
    )
    server.fixed["/api/show"] = json_ok({"parameters": "num_ctx 4096"})
    settings = _settings(
        tmp_path, _local(server.url, context_window=65536), {"summarizer": "small"}
    )
    route = resolve_route(settings, environ={})
    assert (route.context_window, route.summarizer_window) == (65536, 4096)
    shown = [r.body for r in server.fixed_requests if r.path == "/api/show"]
    assert shown == [{"model": "small"}]  # the conversation's window was set: only the summariser


def test_the_conversations_own_route_and_the_extractive_summariser_ask_nothing(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    window_module._CACHE.clear()
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 8192}})
    for compaction in ({"summarizer": "big"}, {"summarizer": "extractive"}):
        settings = _settings(tmp_path, _local(server.url, context_window=9000), compaction)
        route = resolve_route(settings, environ={})
        assert route.summarizer_window is None
        assert wire(settings, route, environ={}).compaction.summarizer_context_window is None
    assert server.fixed_requests == []


def test_a_set_summariser_window_wins_and_nothing_is_asked(tmp_path, server: FakeServer):  # noqa: F811
    window_module._CACHE.clear()
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 2048}})
    compaction = {"summarizer": "small", "summarizer_context_window": 3000}
    settings = _settings(tmp_path, _local(server.url, context_window=9000), compaction)
    route = resolve_route(settings, environ={})
    assert route.summarizer_window is None and server.fixed_requests == []
    assert wire(settings, route, environ={}).compaction.summarizer_context_window == 3000


def test_a_hosted_summariser_has_its_providers_known_window(tmp_path, server: FakeServer):  # noqa: F811
    window_module._CACHE.clear()
    settings = _settings(
        tmp_path, _local(server.url, context_window=4096), {"summarizer": "deepseek:deepseek-chat"}
    )
    route = resolve_route(settings, environ={})
    assert route.summarizer_window == 128_000 and server.fixed_requests == []


def test_a_silent_summariser_server_keeps_the_conversations_window_and_says_so(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    window_module._CACHE.clear()
    settings = _settings(tmp_path, _local(server.url, context_window=9000), {"summarizer": "small"})
    route = resolve_route(settings, environ={})
    assert route.summarizer_window is None
    assert route.notice is not None
    assert "does not report the context window of small" in route.notice
    assert wire(settings, route, environ={}).compaction.summarizer_context_window is None


def test_a_reported_summariser_window_under_1024_is_refused_in_one_line(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    window_module._CACHE.clear()
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 32768}})
    other = _second_server(512)
    try:
        compaction = {"summarizer": "small", "summarizer_base_url": other.url + "/v1"}
        settings = _settings(tmp_path, _local(server.url), compaction)
        with pytest.raises(ConfigError) as refused:
            resolve_route(settings, environ={})
        message = str(refused.value)
        assert "\n" not in message
        assert f"{other.url}/v1 reports a 512-token context window for small" in message
        assert "llama.cpp /props" in message and "at least 1,024" in message
        assert "compaction.summarizer_context_window" in message
        window_module._CACHE.clear()
        other.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 1024}})
        assert resolve_route(settings, environ={}).summarizer_window == 1024  # the bound itself
    finally:
        other.__exit__(None, None, None)


def test_a_configured_summariser_window_has_the_same_bound(tmp_path):
    with pytest.raises(ConfigError, match="summarizer_context_window must be at least 1024"):
        _settings(tmp_path, {}, {"summarizer_context_window": 1023})
    assert MIN_SUMMARIZER_WINDOW == 1024
    # a compact summariser call carries no tools: the conversation's bound is its own
    assert _settings(tmp_path, {}, {"summarizer_context_window": 2048}) is not None
    assert MIN_CONTEXT_WINDOW == 4096


def test_another_summariser_by_flag_drops_the_recorded_window():
    recorded = ss.snapshot(
        Settings(compaction=CompactionSettings(summarizer="small")),
        "openai-compatible",
        "big",
        32768,
        "/w",
        summarizer_window=2048,
    )
    kept = ss.effective(Settings(), recorded, {"compaction": {"chunk_tokens": 900}})
    assert kept.settings.compaction.summarizer_context_window == 2048
    moved = ss.effective(Settings(), recorded, {"compaction": {"summarizer": "tiny"}})
    assert moved.settings.compaction.summarizer_context_window is None  # asked again
    chosen = ss.effective(
        Settings(),
        recorded,
        {"compaction": {"summarizer": "tiny", "summarizer_context_window": 1500}},
    )
    assert chosen.settings.compaction.summarizer_context_window == 1500


def _dsh_run(
    tmp_path: Path, url: str, summarizer_url: str, *args: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    env["DSH_COMPACTION_SUMMARIZER"] = "small"
    env["DSH_COMPACTION_SUMMARIZER_BASE_URL"] = summarizer_url + "/v1"
    command = [DSH, "run", "--base-url", url + "/v1", "--model", "big", "--json", *args]
    return subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )


def _run(tmp_path: Path, url: str, summarizer_url: str, *args: str) -> list[dict]:
    result = _dsh_run(tmp_path, url, summarizer_url, *args)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_dsh_run_records_the_reported_window_and_a_reopen_does_not_ask_again(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 32768}})
    server.queue(openai_text("one"), openai_text("two"))
    other = _second_server(2048)
    try:
        first = _run(tmp_path, server.url, other.url, "first")
        (recorded,) = [e["data"] for e in first if e["type"] == "session/settings"]
        assert recorded["compaction"]["summarizerContextWindow"] == 2048
        session = first[0]["session"]
        second = _run(tmp_path, server.url, other.url, "--session", session, "second")
        assert not [e for e in second if e["type"] == "session/settings"]  # nothing changed
        assert [r.path for r in other.fixed_requests] == ["/props"]  # asked by the first run only
    finally:
        other.__exit__(None, None, None)


def test_dsh_run_refuses_a_summariser_server_with_a_tiny_window_before_any_session(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 32768}})
    other = _second_server(512)
    try:
        result = _dsh_run(tmp_path, server.url, other.url, "hello")
    finally:
        other.__exit__(None, None, None)
    assert result.returncode != 0 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert "reports a 512-token context window for small" in line and "1,024" in line
    assert not list((tmp_path / "home").glob("sessions/*"))  # no session was made
    assert not [r for r in server.requests if r.path.endswith("/chat/completions")]


def test_a_summariser_window_over_the_ceiling_is_refused_or_ignored(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """No model has a window of 10**12 tokens: set, it is refused naming the key; reported by
    a server, it is ignored with a notice, as a server that says nothing is."""
    with pytest.raises(ConfigError) as refused:
        _settings(tmp_path, {}, {"summarizer_context_window": 10**12})
    assert str(refused.value) == (
        "config key compaction.summarizer_context_window must be at most 16777216 "
        "(no model has a larger window) (set in command line)"
    )
    assert _settings(tmp_path, {}, {"summarizer_context_window": 16_777_216}) is not None
    window_module._CACHE.clear()
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 32768}})
    other = _second_server(10**12)
    try:
        compaction = {"summarizer": "small", "summarizer_base_url": other.url + "/v1"}
        route = resolve_route(_settings(tmp_path, _local(server.url), compaction), environ={})
    finally:
        other.__exit__(None, None, None)
    assert route.summarizer_window is None  # sized to the conversation's, not 10**12
    assert route.notice == (
        f"the summariser's server {other.url}/v1 reports a 1,000,000,000,000-token context "
        "window for small (llama.cpp /props), more than any model has (at most 16,777,216): "
        "ignored; its calls are sized to the conversation's (set "
        "compaction.summarizer_context_window)"
    )
