"""Known providers and ``make_provider``: from a provider name to a ready adapter.

Which key a route sends is decided in one place, ``route_api_key``: a key belongs to the
endpoint it was issued for, so ``OPENAI_API_KEY`` goes to an ``openai-compatible`` server only
when that server is OpenAI's own. The API key is handed to the SDK client and nowhere else
(until the client is made, on first use, the function that makes it holds it:
``dsh.llm.sdk_client``): it is not kept on the provider, in the returned tuple, or in any
error message.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from dsh.config import ProviderSettings
from dsh.errors import ConfigError, MissingApiKeyError
from dsh.llm.anthropic_models import CURRENT_SONNET, sampling_dropped
from dsh.llm.types import Provider

log = logging.getLogger(__name__)

Adapter = Literal["openai-compat", "anthropic"]

OPENAI_HOST = "api.openai.com"
"""OpenAI's own API: ``OPENAI_API_KEY`` and the OpenAI SDK's environment headers are for it."""

KEYLESS_PROVIDERS = {
    "scripted": "the scripted provider needs a script (--script FILE)",
    "replay": "the replay provider needs a recorded session (--replay SESSION_ID)",
}


@dataclass(frozen=True, slots=True)
class KnownProvider:
    """What dsh knows about a provider name.

    ``key_env`` is the variable holding the key; ``key_required`` False means a missing key is
    sent as ``"none"`` (local servers ignore it). ``None`` fields must come from the config.
    """

    adapter: Adapter
    base_url: str | None
    key_env: str
    default_model: str | None
    context_window: int | None
    key_required: bool = True
    max_output_tokens: int = 8192
    """The output bound sent when the config sets none (a looping model must stop)."""
    key_host: str | None = None
    """When set, ``key_env`` is read only for an https base URL on this host: the variable
    holds a key of that service, not of whatever server a base URL names."""


KNOWN_PROVIDERS: dict[str, KnownProvider] = {
    "deepseek": KnownProvider(
        "openai-compat", "https://api.deepseek.com", "DEEPSEEK_API_KEY", "deepseek-chat", 128_000
    ),
    "openai": KnownProvider(
        "openai-compat", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4.1", 1_047_576
    ),
    "anthropic": KnownProvider("anthropic", None, "ANTHROPIC_API_KEY", CURRENT_SONNET, 200_000),
    "openai-compatible": KnownProvider(
        "openai-compat",
        None,
        "OPENAI_API_KEY",
        None,
        None,
        key_required=False,
        max_output_tokens=4096,
        key_host=OPENAI_HOST,
    ),
}

MODEL_MAX_OUTPUT_TOKENS: dict[str, int] = {
    "deepseek:deepseek-reasoner": 32_768,
    "openai:gpt-4.1": 32_768,
    "anthropic:claude-sonnet-5-5": 128_000,
    "anthropic:claude-sonnet-5": 128_000,
    "anthropic:claude-sonnet-4-5": 16_384,
    "anthropic:claude-opus-4-1": 16_384,
}
"""Default output bounds of known models that differ from their provider's default."""

MODEL_CONTEXT_WINDOWS: dict[str, int] = {
    "anthropic:claude-sonnet-5-5": 1_000_000,
    "anthropic:claude-sonnet-5": 1_000_000,
}
"""Context windows of known models that differ from their provider's (Anthropic's older models
and any it does not list here: 200K, the smaller, so compaction comes early enough)."""

TEXT_TOOL_CALL_PROVIDERS = frozenset({"openai-compatible"})
"""Providers whose replies are searched for tool calls written as text by default."""


def default_max_output_tokens(provider: str, model: str) -> int | None:
    """The output bound for ``provider:model`` when the config sets none (None: unknown
    provider, e.g. a keyless test double, which sends no bound)."""
    known = KNOWN_PROVIDERS.get(provider)
    if known is None:
        return None
    return MODEL_MAX_OUTPUT_TOKENS.get(f"{provider}:{model}", known.max_output_tokens)


def route_params(
    settings: ProviderSettings, provider: str, model: str, *, output_room: int | None = None
) -> dict[str, Any]:
    """The generation parameters every conversation request on ``provider:model`` carries
    (logged in ``request/header``): always an output bound, plus the sampling settings and
    ``tool_choice`` the config sets. A keyless provider (scripted, replay) gets none.

    ``output_room``: what the window leaves above the compaction threshold. The default bound
    never exceeds it, so the prompt (at most the threshold) plus the bound fits the window —
    servers that check the sum (vLLM, DeepSeek) refuse a request that does not; a bound the
    config sets is sent as set."""
    known = KNOWN_PROVIDERS.get(provider)
    if known is None:
        return {}
    route = settings.for_route(provider, model)
    bound = route.max_output_tokens
    if bound is None:
        bound = default_max_output_tokens(provider, model) or 1
        if output_room is not None:
            bound = max(1, min(bound, output_room))
    params: dict[str, Any] = {"max_tokens": bound}
    if route.temperature is not None:
        params["temperature"] = route.temperature
    if route.top_p is not None:
        params["top_p"] = route.top_p
    if known.adapter == "anthropic" and (refused := sampling_dropped(model, params)):
        for name in refused:
            del params[name]
        log.warning(
            "provider.%s is not sent to %s: Claude Sonnet 5 and later refuse sampling parameters",
            "/".join(refused),
            model,
        )
    if route.tool_choice is not None:
        if known.adapter != "openai-compat":
            raise ConfigError(
                f"provider.tool_choice is for OpenAI-compatible routes, not {provider}"
            )
        params["tool_choice"] = route.tool_choice
    return params


def text_tool_calls_enabled(settings: ProviderSettings, provider: str, model: str) -> bool:
    """Whether replies on this route are searched for tool calls written as text."""
    chosen = settings.for_route(provider, model).text_tool_calls
    return provider in TEXT_TOOL_CALL_PROVIDERS if chosen is None else chosen


def route_api_key(
    name: str,
    base_url: str | None,
    *,
    api_key: str | None = None,
    api_key_env: str | None = None,
    environ: Mapping[str, str],
) -> str | None:
    """The API key a route on the known provider ``name`` at ``base_url`` (None: the
    provider's own endpoint) sends, or None for no key. The one place this is decided.

    An explicit ``api_key`` (``provider.api_key``) wins. Else the variable ``api_key_env``
    names (``provider.api_key_env``), which must then be set and not empty. Else the
    provider's own variable: a named provider (deepseek, openai, anthropic) reads it whatever
    its base URL (the user chose that provider), but ``openai-compatible`` reads
    ``OPENAI_API_KEY`` only for an https base URL on ``api.openai.com`` (its ``key_host``);
    any other server gets no key. Raises ``MissingApiKeyError`` naming the variable to set
    when a named variable is unset or empty, or a provider that needs a key has none."""
    known = KNOWN_PROVIDERS[name]
    if api_key:
        return api_key
    if api_key_env is not None:
        named = environ.get(api_key_env)
        if not named:
            raise MissingApiKeyError(api_key_env, provider=name)
        return named
    if known.key_host is None or on_host(base_url, known.key_host):
        own = environ.get(known.key_env)
        if own:
            return own
    if known.key_required:
        raise MissingApiKeyError(known.key_env, provider=name)
    return None


def on_host(base_url: str | None, host: str) -> bool:
    """Whether ``base_url`` is an https URL on ``host`` (a URL that does not parse is not): the
    one test of a service's own server, for its key here and for the headers its SDK makes of
    the environment in the adapters (``dsh.llm.sdk_environment``)."""
    if base_url is None:
        return False
    try:
        parts = urlsplit(base_url)
        return parts.scheme.lower() == "https" and parts.hostname == host
    except ValueError:
        return False


def needs_model(name: str) -> str:
    """The error of a conversation's route on provider ``name`` without a model: every way to
    give one (the flag, the variable, the config key)."""
    return (
        f"provider {name!r} needs a model: pass --model, or set DSH_PROVIDER_MODEL or "
        "provider.model"
    )


def make_provider(
    name: str,
    *,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    environ: Mapping[str, str],
    api_key_env: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[Provider, str, int | None]:
    """Build the adapter for ``name``; returns ``(provider, model, known context window)``.

    ``model`` and ``base_url`` override the table; the key is ``route_api_key``'s (``api_key``,
    else the variable ``api_key_env`` names, else the provider's own, in ``environ``), sent as
    ``"none"`` when the route has none; ``headers`` (``provider.headers``) go with every
    request, kept like the key on the SDK client only. Raises ``MissingApiKeyError`` naming
    the variable to set, ``ConfigError`` for an unknown name, a keyless provider, or a missing
    base_url / model.
    """
    if name in KEYLESS_PROVIDERS:
        raise ConfigError(KEYLESS_PROVIDERS[name])
    known = KNOWN_PROVIDERS.get(name)
    if known is None:
        names = ", ".join([*KNOWN_PROVIDERS, *KEYLESS_PROVIDERS])
        raise ConfigError(f"unknown provider {name!r}; known providers: {names}")
    resolved_model = model or known.default_model
    if not resolved_model:
        raise ConfigError(needs_model(name))
    url = base_url or known.base_url
    if known.adapter == "openai-compat" and not url:
        raise ConfigError(
            f"provider {name!r} needs a base URL: pass --base-url, or set "
            "DSH_PROVIDER_BASE_URL or provider.base_url"
        )
    chosen = route_api_key(name, url, api_key=api_key, api_key_env=api_key_env, environ=environ)
    key = chosen or "none"
    provider: Provider
    # The adapter imported here, its SDK when its client is made (dsh.llm.sdk_client).
    if known.adapter == "anthropic":
        from dsh.llm.anthropic import AnthropicProvider

        provider = AnthropicProvider(name, resolved_model, url, key, headers=headers)
    else:
        from dsh.llm.openai_compat import OpenAICompatProvider

        provider = OpenAICompatProvider(name, resolved_model, url, key, headers=headers)
    return provider, resolved_model, known_window(name, resolved_model)


def known_window(provider: str, model: str) -> int | None:
    """The context window dsh knows for ``provider:model`` (None: the server is asked)."""
    known = KNOWN_PROVIDERS.get(provider)
    if known is None:
        return None
    return MODEL_CONTEXT_WINDOWS.get(f"{provider}:{model}", known.context_window)
