"""Who writes model summaries: ``compaction.summarizer`` and its explicit provider/base_url."""

from __future__ import annotations

import pytest

from dsh.agent.runtime import resolve_route, summarizer_route
from dsh.config import load_settings
from dsh.errors import ConfigError, MissingApiKeyError
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, openai_text
from tests.llm.provider_helpers import collect, make_request


def settings_for(tmp_path, provider=None, compaction=None, environ=None):
    overrides = {"provider": provider or {}, "compaction": compaction or {}}
    env = {"DSH_HOME": str(tmp_path), **(environ or {})}
    return load_settings(environ=env, cwd=tmp_path, overrides=overrides)


LOCAL = {"name": "openai-compatible", "model": "talker", "api_key": "sk-local-1"}


def test_a_bare_model_name_with_a_tag_runs_on_the_conversations_provider(tmp_path):
    settings = settings_for(
        tmp_path,
        {**LOCAL, "base_url": "http://127.0.0.1:9/v1"},
        {"summarizer": "qwen2.5-coder:0.5b"},
    )
    route = resolve_route(settings, environ={})
    provider, model = summarizer_route(settings, route, environ={})
    assert provider is route.provider and model == "qwen2.5-coder:0.5b"


def test_a_known_provider_prefix_names_that_provider(tmp_path):
    settings = settings_for(
        tmp_path, {**LOCAL, "base_url": "http://127.0.0.1:9/v1"}, {"summarizer": "deepseek:ds-x"}
    )
    route = resolve_route(settings, environ={})
    provider, model = summarizer_route(settings, route, environ={"DEEPSEEK_API_KEY": "k"})
    assert provider is not None and provider.name == "deepseek" and model == "ds-x"
    with pytest.raises(MissingApiKeyError, match="DEEPSEEK_API_KEY"):
        summarizer_route(settings, route, environ={})


def test_a_same_provider_summariser_inherits_the_base_url_and_key(tmp_path, server: FakeServer):  # noqa: F811
    server.queue(openai_text("a summary"))
    settings = settings_for(
        tmp_path,
        {**LOCAL, "base_url": server.url + "/v1"},
        {"summarizer": "openai-compatible:summ-model"},
    )
    route = resolve_route(settings, environ={})
    provider, model = summarizer_route(settings, route, environ={})
    assert provider is not None and model == "summ-model"
    collect(provider.stream(make_request(provider=provider.name, model=model), history=()))
    assert server.requests[0].body["model"] == "summ-model"
    assert server.requests[0].headers["authorization"] == "Bearer sk-local-1"


def test_an_explicit_provider_and_base_url_route_the_summariser_elsewhere(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.queue(openai_text("a summary"))
    settings = settings_for(
        tmp_path,
        {"name": "deepseek"},
        {
            "summarizer": "org/model:v2",
            "summarizer_provider": "openai-compatible",
            "summarizer_base_url": server.url + "/v1",
        },
    )
    route = resolve_route(settings, environ={"DEEPSEEK_API_KEY": "sk-ds"})
    provider, model = summarizer_route(settings, route, environ={})
    assert provider is not None and provider.name == "openai-compatible"
    assert model == "org/model:v2"
    collect(provider.stream(make_request(provider=provider.name, model=model), history=()))
    assert server.requests[0].body["model"] == "org/model:v2"
    assert server.requests[0].headers["authorization"] != "Bearer sk-ds"  # no key crosses over


def test_a_summariser_endpoint_of_its_own_never_gets_the_conversations_key(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """A bare model name with ``summarizer_base_url`` on a DeepSeek session is an
    OpenAI-compatible server; the DeepSeek key (environment or config) is not sent there."""
    server.queue(openai_text("a summary"), openai_text("another"))
    own = {"summarizer": "qwen2.5:0.5b", "summarizer_base_url": server.url + "/v1"}
    for conversation in ({"name": "deepseek"}, {"name": "deepseek", "api_key": "sk-ds-config"}):
        settings = settings_for(tmp_path, conversation, own)
        environ = {"DEEPSEEK_API_KEY": "sk-ds-env"}
        route = resolve_route(settings, environ=environ)
        provider, model = summarizer_route(settings, route, environ=environ)
        assert provider is not None and provider.name == "openai-compatible"
        assert model == "qwen2.5:0.5b"
        collect(provider.stream(make_request(provider=provider.name, model=model), history=()))
    for request in server.requests:
        assert request.body["model"] == "qwen2.5:0.5b"
        assert "sk-ds" not in request.headers.get("authorization", "")


def test_a_local_summariser_at_another_url_gets_no_key_from_the_conversations_config(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.queue(openai_text("a summary"))
    settings = settings_for(
        tmp_path,
        {**LOCAL, "base_url": "http://127.0.0.1:9/v1"},
        {"summarizer": "small", "summarizer_base_url": server.url + "/v1"},
    )
    route = resolve_route(settings, environ={})
    provider, model = summarizer_route(settings, route, environ={})
    assert provider is not None and provider is not route.provider
    collect(provider.stream(make_request(provider=provider.name, model=model), history=()))
    assert "sk-local-1" not in server.requests[0].headers.get("authorization", "")


def test_an_unknown_explicit_summariser_provider_is_refused_by_name(tmp_path):
    settings = settings_for(
        tmp_path, {**LOCAL, "base_url": "http://127.0.0.1:9/v1"},
        {"summarizer": "m", "summarizer_provider": "nowhere"},
    )  # fmt: skip
    with pytest.raises(ConfigError, match="unknown provider 'nowhere'"):
        summarizer_route(settings, resolve_route(settings, environ={}), environ={})


def test_extractive_needs_no_provider(tmp_path):
    settings = settings_for(tmp_path, {**LOCAL, "base_url": "http://127.0.0.1:9/v1"})
    assert summarizer_route(settings, resolve_route(settings, environ={}), environ={}) == (
        None,
        None,
    )
