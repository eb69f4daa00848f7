"""Choosing a route from settings: the provider, model and window, the summariser's route,
and the headless approval policy. What a session runs with is built in ``dsh.agent.wiring``.

A route on a server that names no model (``openai-compatible`` with a base URL, no
``provider.model``) takes the one model the server lists at ``/v1/models`` (llama.cpp and vLLM
serve one), said once in the route's notice; that model is the route's, so it is what the
requests name and the session records (a reopen uses the recorded one and asks nothing). A
server listing several models (Ollama lists every one pulled), none, or not reached is a
one-line ``ConfigError`` naming every way to give a model and, up to ``LISTED_MODELS``, what
the server lists.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dsh.config import (
    DEFAULT_CONTEXT_WINDOW,
    MAX_CONTEXT_WINDOW,
    MIN_CONTEXT_WINDOW,
    MIN_SUMMARIZER_WINDOW,
    ProviderSettings,
    Settings,
    compaction_misfit,
    redact,
    summarizer_window_too_small,
    window_too_large,
    window_too_small,
)
from dsh.config.command_rules import CommandRules
from dsh.errors import ConfigError, MissingApiKeyError
from dsh.llm.registry import KNOWN_PROVIDERS, make_provider, needs_model, route_api_key
from dsh.llm.replay import ReplayProvider
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import Provider
from dsh.llm.window import (
    NOT_READY_WAIT,
    Discovered,
    NotReady,
    Served,
    Unreachable,
    Waiting,
    discover_window,
    served_models,
)
from dsh.store import EventStore
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolKind

WindowFrom = Literal["settings", "server", "default"]
ASSUMED = (
    f"assuming {DEFAULT_CONTEXT_WINDOW:,} tokens (set provider.context_window or --context-window)"
)
"""What a route's notice says of the window its server, asked, did not give."""


@dataclass(frozen=True, slots=True)
class Route:
    provider: Provider
    model: str
    context_window: int | None
    notice: str | None = None
    """Something the face should say once (the server did not report its window, the model
    was the one the server lists)."""
    summarizer_window: int | None = None
    """The window of a summariser on another model or server, as its provider is known to have
    or its server reports it (None: the summariser is this route, or its window is unknown);
    ``compaction.summarizer_context_window`` wins over it."""
    window_from: WindowFrom = "settings"
    """Where ``context_window`` came from: the settings (a window set, the provider's known
    one, a keyless provider's default), the route's ``server`` (asked, it reported it), or the
    ``default`` assumed because the server, asked, did not say. A session records whether it
    was asked (``dsh.agent.asked_window``)."""
    base_url: str | None = None
    """The server the route's calls go to, as the settings give it (None: its provider's own
    endpoint, or a keyless provider); a session records it without credentials."""


def resolve_route(
    settings: Settings,
    *,
    script: Path | None = None,
    replay_from: str | None = None,
    store: EventStore | None = None,
    environ: Mapping[str, str] | None = None,
    waiting: Waiting | None = None,
) -> Route:
    """The provider, model and context window the settings (and flags) ask for; ``waiting``
    is told once when the server answers 503 (loading its model) and is waited for
    (``dsh.llm.window``); one still not ready is refused in one line (``ConfigError``), no
    window assumed. A window the
    server reports under ``MIN_CONTEXT_WINDOW`` is refused in one line (``ConfigError``), as a
    configured one is: assuming another would send requests the server cannot take. One over
    ``MAX_CONTEXT_WINDOW`` is a server's bug: it is ignored, as a server that says nothing is,
    and the notice says so (believed, no compaction would ever run)."""
    cfg = settings.provider
    window = cfg.context_window
    missing = missing_feed(settings, script=script, replay_from=replay_from, store=store)
    if missing is not None:
        raise ConfigError(missing)
    if script is not None or cfg.name == "scripted":  # a script answers, whatever is named
        assert script is not None  # ``missing_feed`` refused the scripted provider without
        model = cfg.model or "scripted"
        return Route(
            ScriptedProvider.from_file(script, model=model, cache="deepseek", keep_requests=0),
            model,
            window or DEFAULT_CONTEXT_WINDOW,
        )
    if cfg.name == "replay":
        assert replay_from is not None and store is not None
        model = cfg.model or "replay"
        return Route(
            ReplayProvider.from_log(store, replay_from), model, window or DEFAULT_CONTEXT_WINDOW
        )
    env = os.environ if environ is None else environ
    chosen, served = chosen_model(cfg, env, waiting)
    try:
        provider, model, known_window = make_provider(
            cfg.name,
            model=chosen,
            base_url=cfg.base_url,
            api_key=cfg.api_key,
            api_key_env=cfg.api_key_env,
            environ=env,
            headers=cfg.headers,
        )
    except MissingApiKeyError as no_key:
        keyed = other_keys(cfg, no_key, env)
        if not keyed:
            raise
        raise MissingApiKeyError(no_key.variable, provider=cfg.name, keyed=keyed) from None
    summarizer_window, summarizer_notice = _summarizer_window(settings, model, env, waiting)
    adopted = None
    if served is not None:
        adopted = (
            f"no model given: using {model}, the one model {redact(cfg.base_url)} serves (choose "
            "another with --model or provider.model)"
        )
    window_from: WindowFrom = "settings"
    if window or known_window or cfg.base_url is None:
        notice = None
        window = window or known_window
    else:
        key = route_api_key(
            cfg.name, cfg.base_url, api_key=cfg.api_key, api_key_env=cfg.api_key_env, environ=env
        )
        found = discover_window(
            cfg.base_url, model, key, cfg.headers, served=served, waiting=waiting
        )
        if isinstance(found, NotReady):
            raise ConfigError(not_ready(cfg.base_url, found))
        implausible = _implausible(found, f"{redact(cfg.base_url)} reports", model)
        if implausible:
            found = None
        if isinstance(found, Discovered) and window_too_small(found.window):
            raise ConfigError(
                f"{redact(cfg.base_url)} reports a {found.window:,}-token context window for "
                f"{model} ({found.source}); dsh needs at least {MIN_CONTEXT_WINDOW:,}: give the "
                "model a larger one on the server (llama-server -c, Ollama's num_ctx, vLLM's "
                "--max-model-len)"
            )
        window_from = "server" if isinstance(found, Discovered) else "default"
        if isinstance(found, Discovered):
            window, notice = found.window, _misfit_notice(settings, model, found.window)
        elif isinstance(found, Unreachable):
            window = DEFAULT_CONTEXT_WINDOW
            notice = (
                f"{redact(cfg.base_url)} could not be reached ({found.reason}) to ask its context "
                f"window; {ASSUMED}"
            )
        else:
            window = DEFAULT_CONTEXT_WINDOW
            said = implausible or f"{redact(cfg.base_url)} does not report its context window"
            notice = f"{said}; {ASSUMED}"
    notice = "; ".join(n for n in (adopted, notice, summarizer_notice) if n) or None
    return Route(provider, model, window, notice, summarizer_window, window_from, cfg.base_url)


def other_keys(
    cfg: ProviderSettings, missing: MissingApiKeyError, environ: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    """The other providers whose key is set in ``environ`` when the conversation's provider
    misses its own (not a variable ``provider.api_key_env`` names): the error offers them."""
    known = KNOWN_PROVIDERS.get(cfg.name)
    if known is None or cfg.api_key_env is not None or missing.variable != known.key_env:
        return ()
    return tuple(
        (name, other.key_env)
        for name, other in KNOWN_PROVIDERS.items()
        if name != cfg.name and other.key_required and environ.get(other.key_env)
    )


def missing_feed(
    settings: Settings,
    *,
    script: Path | None,
    replay_from: str | None,
    store: EventStore | None = None,
) -> str | None:
    """What a keyless provider the settings name needs and was not given, in one line (None:
    nothing): the scripted one its ``--script`` FILE, the replay one the ``--replay`` session
    (and a store to read it from). A session records its route, not what fed it: the session
    picker asks this of a chosen session before it lets the UI open it."""
    name = settings.provider.name
    if name == "scripted" and script is None:
        return "the scripted provider needs --script FILE"
    if name == "replay" and (replay_from is None or store is None):
        return "the replay provider needs --replay SESSION_ID"
    return None


LISTED_MODELS = 5
"""How many of a server's models the error of a route without a model names."""


def not_ready(base_url: str, found: NotReady) -> str:
    """The line of a server that stayed not ready (503) while it was waited for."""
    return (
        f"{redact(base_url)} is not ready: {found.reason} for {NOT_READY_WAIT:g} s; start dsh "
        "again once it has loaded its model"
    )


def chosen_model(
    cfg: ProviderSettings, environ: Mapping[str, str], waiting: Waiting | None = None
) -> tuple[str | None, Served | None]:
    """The model the route names (None: its provider's default), and when it names none on a
    provider without a default but with a server, that server's one listed model with the list
    (``served``, handed on so the window probe does not ask again); see the module docstring."""
    known = KNOWN_PROVIDERS.get(cfg.name)
    if cfg.model or known is None or known.default_model or cfg.base_url is None:
        return cfg.model, None  # make_provider says what is missing, if anything
    key = route_api_key(
        cfg.name, cfg.base_url, api_key=cfg.api_key, api_key_env=cfg.api_key_env, environ=environ
    )
    served = served_models(cfg.base_url, key, cfg.headers, waiting=waiting)
    if isinstance(served, NotReady):
        raise ConfigError(not_ready(cfg.base_url, served))
    if isinstance(served, Served) and len(served.models) == 1:
        return served.models[0], served
    if isinstance(served, Unreachable):
        why = f"{redact(cfg.base_url)} could not be asked which it serves ({served.reason})"
    elif served.refused is not None:
        why = f"{redact(cfg.base_url)} could not be asked which it serves ({served.refused})"
    elif not served.models:
        why = f"{redact(cfg.base_url)} lists no model at /v1/models"
    else:
        names = served.models
        more = f" and {len(names) - LISTED_MODELS} more" if len(names) > LISTED_MODELS else ""
        shown = ", ".join(names[:LISTED_MODELS])
        why = f"{redact(cfg.base_url)} serves {len(names)} models: {shown}{more}"
    raise ConfigError(f"{needs_model(cfg.name)}; {why}")


def _summarizer_window(
    settings: Settings, model: str, environ: Mapping[str, str], waiting: Waiting | None = None
) -> tuple[int | None, str | None]:
    """The window of a summariser on another model or server than the conversation's ``model``
    and what to say when its server does not report one (its calls are then sized to the
    conversation's window, as before). Its provider's known window, else its server's answer
    (asked once per process, like the conversation's); nothing is asked when
    ``compaction.summarizer_context_window`` is set or the summariser is the conversation. A
    reported window under ``MIN_SUMMARIZER_WINDOW`` is refused (``ConfigError``), as a
    configured one is: it leaves a call no useful room."""
    cfg, conversation = settings.compaction, settings.provider
    target = summarizer_target(settings, conversation.name)
    if cfg.summarizer_context_window is not None or target is None:
        return None, None
    name, summarizer_model = target
    same = name == conversation.name
    if same and summarizer_model == model and cfg.summarizer_base_url is None:
        return None, None
    known = KNOWN_PROVIDERS.get(name)
    if known is None:  # an unknown name: make_provider says so when the summariser is built
        return None, None
    if known.context_window is not None and cfg.summarizer_base_url is None:
        return known.context_window, None
    endpoint = _summarizer_endpoint(settings, same=same)
    base_url = endpoint.base_url or known.base_url
    if base_url is None:
        return known.context_window, None
    key = route_api_key(
        name,
        base_url,
        api_key=endpoint.api_key,
        api_key_env=endpoint.api_key_env,
        environ=environ,
    )
    found = discover_window(base_url, summarizer_model, key, endpoint.headers, waiting=waiting)
    implausible = _implausible(
        found, f"the summariser's server {redact(base_url)} reports", summarizer_model
    )
    if implausible:
        found = None
    if isinstance(found, Discovered) and summarizer_window_too_small(found.window):
        raise ConfigError(
            f"the summariser's server {redact(base_url)} reports a {found.window:,}-token "
            f"context window for {summarizer_model} ({found.source}); a summariser needs at "
            f"least {MIN_SUMMARIZER_WINDOW:,}: give it a larger window, choose another "
            "compaction.summarizer, or set compaction.summarizer_context_window"
        )
    if isinstance(found, Discovered):
        return found.window, None
    if known.context_window is not None:
        return known.context_window, None
    said = (
        f"could not be reached ({found.reason}) to ask"
        if isinstance(found, Unreachable | NotReady)
        else "does not report"
    )
    asked = (
        implausible or f"the summariser's server {said} the context window of {summarizer_model}"
    )
    return None, (
        f"{asked}; its calls are sized to the conversation's (set "
        "compaction.summarizer_context_window)"
    )


def _implausible(
    found: Discovered | Unreachable | NotReady | None, reports: str, model: str
) -> str | None:
    """What to say of a window the server reports over ``MAX_CONTEXT_WINDOW`` (None: it
    reports none, or a believable one): ``reports`` is who says it."""
    if not isinstance(found, Discovered) or not window_too_large(found.window):
        return None
    return (
        f"{reports} a {found.window:,}-token context window for {model} ({found.source}), "
        f"more than any model has (at most {MAX_CONTEXT_WINDOW:,}): ignored"
    )


def _misfit_notice(settings: Settings, model: str, window: int) -> str | None:
    """A server-reported window the budgets of the route's ``model`` cannot compact in (a
    configured one is refused by config validation; a reported one is the server's, so it is
    said, not refused)."""
    budgets = settings.compaction.for_route(settings.provider.name, model)
    if budgets.backend == "off":
        return None
    problem = compaction_misfit(budgets, window)
    if problem is None:
        return None
    return (
        f"the server reports a {window:,}-token context window, too small for these compaction "
        f"budgets ({problem.removeprefix('config key ')}); passes will refuse until you lower it"
    )


def summarizer_target(settings: Settings, conversation: str) -> tuple[str, str] | None:
    """The provider and model that write model summaries for a conversation on the provider
    ``conversation`` (None: the extractive summariser calls no model); see ``summarizer_route``."""
    cfg = settings.compaction
    if cfg.summarizer == "extractive":
        return None
    prefix, colon, rest = cfg.summarizer.partition(":")
    if cfg.summarizer_provider is not None:
        return cfg.summarizer_provider, cfg.summarizer
    if colon and prefix in KNOWN_PROVIDERS:
        return prefix, rest
    own = cfg.summarizer_base_url
    if own is not None and own != settings.provider.base_url:
        # an endpoint of its own, no provider named: an OpenAI-compatible server, as a
        # --base-url makes the conversation's route; the conversation's key stays home
        return "openai-compatible", cfg.summarizer
    return conversation, cfg.summarizer


def summarizer_route(
    settings: Settings, route: Route, environ: Mapping[str, str] | None = None
) -> tuple[Provider | None, str | None]:
    """Who writes model summaries (extractive needs no one).

    ``compaction.summarizer`` is a model name (tags and all: ``qwen2.5-coder:0.5b``) on the
    conversation's provider, or ``provider:model`` when the prefix is a known provider.
    ``compaction.summarizer_provider`` / ``summarizer_base_url`` name the route explicitly; a
    ``summarizer_base_url`` other than the conversation's, with no provider named, is an
    ``openai-compatible`` server. A summariser on the conversation's provider and endpoint
    inherits its base URL, key and ``provider.headers``: neither the conversation's key nor its
    headers are ever sent to another endpoint. Elsewhere its key is read from
    ``compaction.summarizer_api_key_env``, else chosen for its provider and endpoint as a
    conversation's would be (``route_api_key``), and it sends no extra header."""
    cfg = settings.compaction
    target = summarizer_target(settings, route.provider.name)
    if target is None:
        return None, None
    name, model = target
    same = name == route.provider.name
    if same and cfg.summarizer_base_url is None:
        return route.provider, model
    endpoint = _summarizer_endpoint(settings, same=same)
    provider, resolved, _ = make_provider(
        name,
        model=model,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        api_key_env=endpoint.api_key_env,
        environ=os.environ if environ is None else environ,
        headers=endpoint.headers,
    )
    return provider, resolved


@dataclass(frozen=True, slots=True)
class _Endpoint:
    """Where the summariser's calls go, what the config says of its key (the key itself is
    ``route_api_key``'s choice) and the headers it sends."""

    base_url: str | None
    """None: its provider's own endpoint."""
    api_key: str | None
    api_key_env: str | None
    headers: Mapping[str, str]


def _summarizer_endpoint(settings: Settings, *, same: bool) -> _Endpoint:
    """The summariser's endpoint: its own base URL, else the conversation's when it is on the
    conversation's provider (``same``), else its provider's own. On the conversation's provider
    and endpoint it shares the conversation's ``api_key``, ``api_key_env`` and ``headers``;
    anywhere else only ``compaction.summarizer_api_key_env`` (unset: its provider's own
    variable, by the rule of ``route_api_key``) and no header, so neither the conversation's
    key nor its headers go to another endpoint."""
    conversation = settings.provider
    own = settings.compaction.summarizer_base_url
    base_url = own or (conversation.base_url if same else None)
    if same and (own is None or own == conversation.base_url):
        return _Endpoint(
            base_url, conversation.api_key, conversation.api_key_env, conversation.headers
        )
    return _Endpoint(base_url, None, settings.compaction.summarizer_api_key_env, {})


def approval_policy(settings: Settings, *, yes: bool, allow: frozenset[ToolKind]) -> ApprovalPolicy:
    """The policy of ``--yes`` (mode ``auto``) and ``--allow`` (``allow``'s kinds run unasked),
    else the configured mode (``tools.approval``, which an untrusted project could only tighten).
    The flags are the user's own choice, so they win over the config; ``allow`` is kept under
    ``yes`` for a later switch of mode (the terminal UI's ``/approval``). The command rules
    (``tools.allow_commands``, ``tools.deny_commands``) apply under every mode."""
    rules = CommandRules.of(settings.tools.allow_commands, settings.tools.deny_commands)
    mode = "auto" if yes else settings.tools.approval
    return ApprovalPolicy(mode, allow=allow, commands=rules)
