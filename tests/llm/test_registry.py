"""make_provider: names, defaults, keys from the environment, and errors that say what to do."""

from __future__ import annotations

import pytest

from dsh.errors import ConfigError, MissingApiKeyError
from dsh.llm.anthropic import AnthropicProvider
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.llm.registry import KNOWN_PROVIDERS, make_provider

SECRET = "sk-registry-secret"


def make(
    name: str,
    environ: dict[str, str] | None = None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
):
    return make_provider(
        name, model=model, base_url=base_url, api_key=api_key, environ=environ or {}
    )


@pytest.mark.parametrize(
    ("name", "variable"),
    [
        ("deepseek", "DEEPSEEK_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
    ],
)
def test_missing_key_names_the_variable_to_set(name: str, variable: str):
    with pytest.raises(MissingApiKeyError) as info:
        make(name)

    assert info.value.variable == variable
    assert isinstance(info.value, ConfigError)
    message = str(info.value)
    assert message == f"no API key for {name}: set {variable} (or run `dsh demo`, which needs none)"
    assert "\n" not in message


def test_deepseek_defaults_with_key_from_the_environment():
    provider, model, window = make("deepseek", {"DEEPSEEK_API_KEY": SECRET})

    assert isinstance(provider, OpenAICompatProvider)
    assert (provider.name, model, window) == ("deepseek", "deepseek-chat", 128_000)


def test_openai_and_anthropic_defaults():
    openai_provider, openai_model, openai_window = make("openai", api_key=SECRET)
    anthropic_provider, anthropic_model, anthropic_window = make("anthropic", api_key=SECRET)

    assert isinstance(openai_provider, OpenAICompatProvider)
    assert (openai_model, openai_window) == ("gpt-4.1", 1_047_576)
    assert isinstance(anthropic_provider, AnthropicProvider)
    assert (anthropic_model, anthropic_window) == ("claude-sonnet-5-5", 1_000_000)


def test_configured_model_overrides_the_default():
    _, model, _ = make("deepseek", api_key=SECRET, model="deepseek-reasoner")

    assert model == "deepseek-reasoner"


def test_openai_compatible_needs_base_url_and_model_but_no_key():
    with pytest.raises(ConfigError, match="base_url"):
        make("openai-compatible", model="llama3")
    with pytest.raises(ConfigError, match="model"):
        make("openai-compatible", base_url="http://127.0.0.1:11434/v1")

    provider, model, window = make(
        "openai-compatible", model="llama3", base_url="http://127.0.0.1:11434/v1"
    )

    assert isinstance(provider, OpenAICompatProvider)
    assert (model, window) == ("llama3", None)


def test_openai_compatible_uses_the_openai_key_only_on_api_openai_com():
    """The OpenAI key belongs to OpenAI: another server gets none (tests/llm/test_route_api_key.py
    has the whole rule)."""
    local, _, _ = make(
        "openai-compatible", {"OPENAI_API_KEY": SECRET}, model="m", base_url="http://127.0.0.1:1/v1"
    )
    openai, _, _ = make(
        "openai-compatible",
        {"OPENAI_API_KEY": SECRET},
        model="m",
        base_url="https://api.openai.com/v1",
    )

    assert local.sdk_client()[0].api_key == "none"  # type: ignore[attr-defined]
    assert openai.sdk_client()[0].api_key == SECRET  # type: ignore[attr-defined]


def test_unknown_provider_lists_the_known_names():
    with pytest.raises(ConfigError) as info:
        make("nope")

    for name in KNOWN_PROVIDERS:
        assert name in str(info.value)


@pytest.mark.parametrize(
    ("name", "hint"), [("scripted", "--script"), ("replay", "recorded session")]
)
def test_keyless_providers_are_built_elsewhere(name: str, hint: str):
    with pytest.raises(ConfigError, match=hint):
        make(name)


@pytest.mark.parametrize("name", ["deepseek", "openai", "anthropic"])
def test_key_is_kept_only_by_the_client(name: str):
    """By the SDK client, made on first use, and until then by what makes it: no other
    attribute holds it, and no repr shows it, before the client is made or after."""
    provider, model, window = make(name, api_key=SECRET)

    for _ in ("before the client is made", "after"):
        kept = {k: v for k, v in vars(provider).items() if k != "_sdk"}
        assert SECRET not in repr(kept)
        assert SECRET not in repr(provider._sdk)  # type: ignore[attr-defined]
        assert SECRET not in repr((model, window))
        client, _ = provider.sdk_client()  # type: ignore[attr-defined]
    assert client.api_key == SECRET
