"""Every conversation request is bounded (``provider.max_output_tokens``, defaults per provider
and model, overridable per route) and carries the sampling settings the config asks for."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dsh.agent.runtime import resolve_route
from dsh.agent.wiring import build_agent
from dsh.config import ProviderSettings, Settings, load_settings
from dsh.errors import ConfigError
from dsh.events import RequestHeaderEvent
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.llm.registry import default_max_output_tokens, route_params, text_tool_calls_enabled
from dsh.llm.types import ModelRequest
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_text


def test_every_known_provider_has_a_bound_and_known_models_their_own():
    assert route_params(ProviderSettings(), "openai-compatible", "qwen") == {"max_tokens": 4096}
    assert route_params(ProviderSettings(), "deepseek", "deepseek-chat") == {"max_tokens": 8192}
    assert default_max_output_tokens("deepseek", "deepseek-reasoner") == 32_768
    assert default_max_output_tokens("anthropic", "claude-sonnet-4-5") == 16_384
    assert route_params(ProviderSettings(), "scripted", "scripted") == {}  # keyless doubles


def test_the_default_bound_fits_what_the_window_leaves_above_the_threshold():
    """A 4,096-token server window compacted at 80% leaves 820 tokens for the reply: a 4,096
    bound beside a prompt at the threshold asks more than the window (vLLM refuses it)."""
    assert route_params(ProviderSettings(), "openai-compatible", "q", output_room=820) == {
        "max_tokens": 820
    }
    assert route_params(ProviderSettings(), "openai-compatible", "q", output_room=25_600) == {
        "max_tokens": 4096
    }
    configured = ProviderSettings(max_output_tokens=2000)
    assert route_params(configured, "openai-compatible", "q", output_room=820) == {
        "max_tokens": 2000
    }


def test_a_discovered_small_window_lowers_the_requests_default_bound(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 4096}})
    server.queue(openai_text("hi"))
    settings = Settings(
        provider=ProviderSettings(name="openai-compatible", model="q", base_url=server.url + "/v1")
    )
    route = resolve_route(settings, environ={})
    session = Session.create(JsonlStore(tmp_path / "home"), cwd=tmp_path)
    agent = build_agent(
        session, settings, route, workspace=tmp_path, policy=ApprovalPolicy("auto"), environ={}
    )
    asyncio.run(agent.run_turn("hello"))
    assert server.bodies[0]["max_tokens"] == 4096 - int(4096 * 0.8)


def test_a_threshold_at_the_whole_window_still_leaves_the_reply_an_eighth_of_it(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 4096}})
    server.queue(openai_text("hi"))
    settings = load_settings(
        overrides={
            "provider": {"name": "openai-compatible", "model": "q", "base_url": server.url + "/v1"},
            "compaction": {"threshold_ratio": 1.0, "low_watermark_ratio": 0.5},
        },
        environ={},
        cwd=tmp_path,
    )
    route = resolve_route(settings, environ={})
    session = Session.create(JsonlStore(tmp_path / "home"), cwd=tmp_path)
    agent = build_agent(
        session, settings, route, workspace=tmp_path, policy=ApprovalPolicy("auto"), environ={}
    )
    asyncio.run(agent.run_turn("hello"))
    assert server.bodies[0]["max_tokens"] == 4096 // 8


def _settings(tmp_path: Path, toml: str) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(toml)
    return load_settings(environ={"DSH_HOME": str(home)}, cwd=tmp_path)


def test_overrides_per_route_from_the_config_file(tmp_path: Path):
    settings = _settings(
        tmp_path,
        """
[provider]
name = "openai-compatible"
max_output_tokens = 1024
temperature = 0.7

[provider.overrides."openai-compatible:qwen-0.5b"]
max_output_tokens = 256
top_p = 0.9
tool_choice = "required"
text_tool_calls = false
""",
    )
    cfg = settings.provider
    assert route_params(cfg, "openai-compatible", "qwen-0.5b") == {
        "max_tokens": 256,
        "temperature": 0.7,
        "top_p": 0.9,
        "tool_choice": "required",
    }
    assert route_params(cfg, "openai-compatible", "other") == {
        "max_tokens": 1024,
        "temperature": 0.7,
    }
    assert not text_tool_calls_enabled(cfg, "openai-compatible", "qwen-0.5b")
    assert text_tool_calls_enabled(cfg, "openai-compatible", "other")
    assert not text_tool_calls_enabled(cfg, "deepseek", "deepseek-chat")
    assert not text_tool_calls_enabled(cfg, "anthropic", "claude-sonnet-4-5")


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        ("[provider]\ntop_p = 1.5", "provider.top_p"),
        ("[provider]\nmax_output_tokens = 0", "provider.max_output_tokens"),
        ("[provider]\nstream_idle_timeout = 0", "provider.stream_idle_timeout"),
        ('[provider.overrides."x:m"]\ntemperature = 3', 'provider.overrides."x:m".temperature'),
        ('[provider]\ntool_choice = "always"', "tool_choice"),
        ('[provider.overrides."x:m"]\nmax_tokens = 5', "max_tokens"),
    ],
)
def test_bad_provider_settings_are_refused_naming_the_key(tmp_path: Path, toml: str, named: str):
    with pytest.raises(ConfigError) as error:
        _settings(tmp_path, toml)
    assert named in str(error.value)


def test_tool_choice_is_refused_on_anthropic_routes():
    with pytest.raises(ConfigError, match="tool_choice"):
        route_params(ProviderSettings(tool_choice="auto"), "anthropic", "claude-sonnet-4-5")


def test_the_bound_and_sampling_reach_the_wire_and_the_header(tmp_path: Path, server: FakeServer):  # noqa: F811
    server.queue(openai_text("hi"))
    settings = _settings(
        tmp_path,
        f"""
[provider]
name = "openai-compatible"
model = "qwen"
base_url = "{server.url}/v1"
temperature = 0.2

[provider.overrides.qwen]
max_output_tokens = 300
""",
    )
    session = Session.create(JsonlStore(tmp_path / "home"), cwd=tmp_path)
    route = resolve_route(settings, environ={})
    agent = build_agent(
        session, settings, route, workspace=tmp_path, policy=ApprovalPolicy("auto"), environ={}
    )
    asyncio.run(agent.run_turn("hello"))
    (body,) = server.bodies
    assert body["max_tokens"] == 300 and body["temperature"] == 0.2
    header = next(e for e in session.events if isinstance(e, RequestHeaderEvent))
    assert header.data.header.config.params == {"max_tokens": 300, "temperature": 0.2}
    session.close()


def test_openai_itself_gets_max_completion_tokens(server: FakeServer):  # noqa: F811
    server.queue(openai_text("hi"))
    provider = OpenAICompatProvider("openai", "gpt-4.1", server.url + "/v1", "k")
    request = ModelRequest("openai", "gpt-4.1", None, (), (), params={"max_tokens": 99})

    async def drain() -> None:
        async for _ in provider.stream(request, history=()):
            pass

    asyncio.run(drain())
    (body,) = server.bodies
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body
