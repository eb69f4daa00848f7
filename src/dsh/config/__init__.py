"""One ``Settings`` object, layered (docs/config.md).

Later layers win: defaults < ``$DSH_HOME/config.toml`` < ``./.dsh/config.toml`` < ``DSH_*``
environment variables < command-line flags. TOML keys are snake_case, in sections; environment
variables are ``DSH_<SECTION>_<KEY>`` (``DSH_COMPACTION_CHUNK_TOKENS=800``). Unknown keys are
refused by name, and so is a value of the wrong type or out of range.

A project's ``./.dsh/config.toml`` comes with the repository, so it is not trusted by default: it
may tighten the safety settings (``tools.approval``, ``tools.scrub_env``, ``provider.base_url``,
the key and the variable it is read from, ``provider.headers``, the summariser's route and key
variable) but never loosen them, nor start a program (an MCP server under ``[mcp.servers]``). A
loosening key or a server is ignored with a warning naming it (a key or a header's value is
never shown), until the user trusts that directory (``dsh trust``), which records it under
``[trust] directories`` in the user's own ``$DSH_HOME/config.toml`` with the file's digest: a
file changed since is untrusted again, with one warning (:mod:`dsh.config.trust`). Only the user
config may hold ``[trust]``.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from dsh.config.environment import environment_layer
from dsh.config.headers import check_header_types, header_problems, shown_headers
from dsh.config.mcp_servers import check_servers, drop_project_servers, validate_server
from dsh.config.reading import dsh_home, parse_toml, read_bytes, read_toml
from dsh.config.rules import (
    BASE_URL_RULE,
    Problem,
    base_url_problem,
    base_url_problems,
    compaction_problems,
    misfit,
    session_problems,
)
from dsh.config.sections import (
    APPROVAL_STRICTNESS,
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_REPEATED_CALLS,
    ENVIRONMENT_NAMES,
    LARGE_WINDOW_CHUNK,
    LARGE_WINDOW_STATE,
    LARGE_WINDOW_STUB,
    MIN_CONTEXT_WINDOW,
    MIN_SUMMARIZER_WINDOW,
    SECTIONS,
    SUMMARIZER_WINDOW_RULE,
    USER_ONLY_SECTIONS,
    WINDOW_RULE,
    CompactionOverride,
    CompactionSettings,
    McpServerSettings,
    McpSettings,
    ProviderOverride,
    ProviderSettings,
    RecallSettings,
    Settings,
    StoreSettings,
    ToolChoice,
    ToolSettings,
    TrustSettings,
    summarizer_window_too_small,
    window_too_small,
)
from dsh.config.trust import (
    PROJECT_CONFIG,
    TrustState,
    config_digest,
    is_trusted,
    records_of,
    set_trust,
    stale_trust_warning,
    state_of,
    trust_records,
    trust_state,
    trusted_directories,
)
from dsh.config.wording import check_named_tables, describe, unknown_key, unknown_section
from dsh.errors import ConfigError

__all__ = [
    "APPROVAL_STRICTNESS",
    "BASE_URL_RULE",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_REPEATED_CALLS",
    "ENVIRONMENT_NAMES",
    "LARGE_WINDOW_CHUNK",
    "LARGE_WINDOW_STATE",
    "LARGE_WINDOW_STUB",
    "MIN_CONTEXT_WINDOW",
    "MIN_SUMMARIZER_WINDOW",
    "SECTIONS",
    "SUMMARIZER_WINDOW_RULE",
    "USER_ONLY_SECTIONS",
    "WINDOW_RULE",
    "CompactionOverride",
    "CompactionSettings",
    "McpServerSettings",
    "McpSettings",
    "Problem",
    "ProviderOverride",
    "ProviderSettings",
    "RecallSettings",
    "Settings",
    "StoreSettings",
    "ToolChoice",
    "ToolSettings",
    "TrustSettings",
    "TrustState",
    "base_url_problem",
    "compaction_misfit",
    "compaction_problems",
    "dsh_home",
    "is_trusted",
    "load_settings",
    "restrict_project_layer",
    "session_problems",
    "set_trust",
    "summarizer_window_too_small",
    "trust_records",
    "trust_state",
    "trusted_directories",
    "validate_settings",
    "window_too_small",
]

log = logging.getLogger(__name__)
"""``dsh.config``: the CLI prints each of its warnings once per command however often the
config is read (``dsh.cli.warning_lines``)."""
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def load_settings(
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Settings:
    """Merge every layer into one validated ``Settings``."""
    env = os.environ if environ is None else environ
    merged: dict[str, dict[str, Any]] = {}
    origins: dict[str, str] = {}
    """``section.key`` → where its value came from (an error names it)."""
    user_path = dsh_home(env) / "config.toml"
    if user_path.exists():  # a directory there is refused by name, not skipped
        _merge(merged, read_toml(user_path), origin=str(user_path), origins=origins)
    workspace = (cwd or Path.cwd()).resolve()
    project_path = workspace / PROJECT_CONFIG
    if project_path.exists():
        content = read_bytes(project_path)  # one read: the bytes checked are the bytes applied
        layer = parse_toml(content, project_path)
        _merge({}, layer, origin=str(project_path))  # unknown keys are refused first, by name
        records = records_of(merged.get("trust", {}), user_path)
        state = state_of(workspace, records, config_digest(content))
        stale = stale_trust_warning(state, project_path, workspace)
        if stale is not None:
            log.warning("%s", stale)
        trusted = state == "trusted"
        layer = restrict_project_layer(layer, merged, trusted=trusted, origin=str(project_path))
        _merge(merged, layer, origin=str(project_path), origins=origins)
    layer = environment_layer(env, SECTIONS, skip=ENVIRONMENT_NAMES, refuse=USER_ONLY_SECTIONS)
    _merge(merged, layer, origin="environment")
    for section, values in layer.items():
        for key in values:
            origins[f"{section}.{key}"] = "environment variable " + f"DSH_{section}_{key}".upper()
    if overrides:
        flags = {k: dict(v) for k, v in overrides.items()}
        _merge(merged, flags, origin="command line", origins=origins)
    try:
        check_servers(merged)
        _check_overrides(merged)
        check_header_types(merged)
        settings = msgspec.convert(merged, Settings, strict=False)
        validate_settings(settings)
    except msgspec.ValidationError as exc:
        raise ConfigError(_set_in(describe(exc, Settings), origins)) from exc
    except ConfigError as exc:
        raise ConfigError(_set_in(str(exc), origins)) from exc
    return settings


def _check_overrides(merged: Mapping[str, Mapping[str, Any]]) -> None:
    """Convert each ``[provider.overrides."…"]`` and ``[compaction.overrides."…"]`` table on
    its own, so an error names its route (a whole conversion says ``overrides[...]``)."""
    for section, kind in (("provider", ProviderOverride), ("compaction", CompactionOverride)):
        tables = merged.get(section, {}).get("overrides")
        check_named_tables(tables, kind, f'{section}.overrides."{{}}"'.format)


def _set_in(message: str, origins: Mapping[str, str]) -> str:
    """``message`` naming where the key it names was set (a file, a variable, the command
    line), when that is known."""
    found = re.search(r"config key ([a-z_]+(?:\.[A-Za-z0-9_-]+)+)", message)
    origin = None
    if found:  # the longest key known: mcp.servers.NAME.timeout_s was set with its server
        parts = found.group(1).split(".")
        keys = (".".join(parts[:n]) for n in range(len(parts), 1, -1))
        origin = next((origins[key] for key in keys if key in origins), None)
    return f"{message} (set in {origin})" if origin else message


def restrict_project_layer(
    layer: Mapping[str, Any],
    below: Mapping[str, Mapping[str, Any]],
    *,
    trusted: bool,
    origin: str,
) -> dict[str, Any]:
    """The project layer with every key that would loosen safety dropped (each one logged as a
    warning naming it); ``below`` is what the defaults and the user config give so far.

    Untrusted, a project may only: choose a stricter ``tools.approval``; add to
    ``tools.scrub_env`` (the lists are joined); repeat the ``provider.name``, ``base_url``,
    ``provider.api_key``, ``provider.api_key_env``, ``provider.headers`` and the summariser
    route (``summarizer_provider``, ``summarizer_base_url``, ``summarizer_api_key_env``)
    already in effect (or switch the summariser to ``extractive`` or a bare model name on the
    conversation's provider); a key variable it named could be another of the user's secrets,
    sent to the endpoint, and headers it chose would go with the user's key (an organisation,
    a gateway's routing). Nor may it start a program: its ``[mcp.servers]`` are ignored (a
    server the user config already defines the same way is kept). Nobody's project may set
    ``[trust]``.
    """
    out: dict[str, Any] = {s: dict(v) if isinstance(v, Mapping) else v for s, v in layer.items()}

    def drop(section: str, key: str, why: str) -> None:
        value = out[section].pop(key)
        log.warning(
            "%s: ignored %s.%s = %s: %s; review that file first: if you want it to apply, "
            "run `dsh trust` in that directory",
            origin,
            section,
            key,
            _shown(key, value),
            why,
        )

    if "trust" in out:
        log.warning("%s: ignored [trust]: only the user config may trust directories", origin)
        del out["trust"]
    if trusted:
        return out
    tools, provider = out.get("tools", {}), out.get("provider", {})
    compaction = out.get("compaction", {})
    default_tools = ToolSettings()
    if "approval" in tools:
        current = below.get("tools", {}).get("approval", default_tools.approval)
        wanted = tools["approval"]
        if APPROVAL_STRICTNESS.get(wanted, 99) < APPROVAL_STRICTNESS.get(current, 0):
            drop("tools", "approval", f"it is looser than {current!r}")
    if "scrub_env" in tools and isinstance(tools["scrub_env"], list):
        tools["scrub_env"] = [*below.get("tools", {}).get("scrub_env", []), *tools["scrub_env"]]
    current_name = below.get("provider", {}).get("name", ProviderSettings().name)
    if "name" in provider and provider["name"] != current_name:
        # another provider is another endpoint, paid with the user's key for it
        drop("provider", "name", "a project may not send requests to another provider")
    if "base_url" in provider and provider["base_url"] != below.get("provider", {}).get("base_url"):
        drop("provider", "base_url", "a project may not send requests to another endpoint")
    if "api_key" in provider and provider["api_key"] != below.get("provider", {}).get("api_key"):
        drop("provider", "api_key", "a project may not send requests to another account")
    if "summarizer" in compaction:
        wanted = compaction["summarizer"]
        current = below.get("compaction", {}).get("summarizer", "extractive")
        if isinstance(wanted, str) and ":" in wanted and wanted != current:
            drop("compaction", "summarizer", "a project may not choose the summariser's provider")
    for key in ("summarizer_provider", "summarizer_base_url"):
        if key in compaction and compaction[key] != below.get("compaction", {}).get(key):
            drop("compaction", key, "a project may not choose the summariser's provider")
    for section, key in (("provider", "api_key_env"), ("compaction", "summarizer_api_key_env")):
        table = out.get(section, {})
        if key in table and table[key] != below.get(section, {}).get(key):
            drop(section, key, "a project may not choose which secret is sent")
    users_headers = below.get("provider", {}).get("headers", {})
    if "headers" in provider and provider["headers"] != users_headers:
        drop("provider", "headers", "a project may not choose what is sent with the user's key")
    drop_project_servers(out, below, origin)
    return out


def _shown(key: str, value: object) -> str:
    """A dropped project value as its warning shows it: never a key, nor a header's value."""
    if key == "api_key":
        return "(a key)"
    if key == "headers":
        return shown_headers(value)
    return json.dumps(value)


def validate_settings(settings: Settings) -> None:
    """Range checks that a type cannot express; each error names the offending key."""
    _refuse(base_url_problems(settings))
    _refuse(compaction_problems(settings.compaction))
    for name in settings.compaction.overrides:
        provider, _, model = name.rpartition(":")
        merged = settings.compaction.for_route(provider, model)
        _refuse(compaction_problems(merged, f'compaction.overrides."{name}"'))
    recall = settings.recall
    _require(recall.read_budget_chars >= 50, "recall.read_budget_chars", "must be at least 50")
    _require(1 <= recall.search_limit <= 200, "recall.search_limit", "must be in [1, 200]")
    repeats = settings.tools.max_repeated_calls
    _require(repeats == 0 or repeats >= 2, "tools.max_repeated_calls", "must be 0 or at least 2")
    window = settings.provider.context_window
    _require(not window_too_small(window), "provider.context_window", WINDOW_RULE)
    for key, variable in (
        ("provider.api_key_env", settings.provider.api_key_env),
        ("compaction.summarizer_api_key_env", settings.compaction.summarizer_api_key_env),
    ):
        named = variable is None or _VARIABLE_NAME.fullmatch(variable) is not None
        _require(named, key, "must be an environment variable name (letters, digits and _)")
    _refuse(header_problems(settings.provider.headers))
    _validate_provider(settings.provider, "provider")
    for name in settings.provider.overrides:
        provider, _, model = name.rpartition(":")
        route = settings.provider.for_route(provider, model)
        _validate_provider(route, f'provider.overrides."{name}"')
    if window is not None:
        _refuse([problem for problem in [misfit(settings.compaction, window)] if problem])
    for name, server in settings.mcp.servers.items():
        validate_server(name, server)


def _validate_provider(p: ProviderSettings, where: str) -> None:
    rules = [
        (p.max_output_tokens is None or p.max_output_tokens >= 1, "max_output_tokens", ">= 1"),
        (p.temperature is None or 0 <= p.temperature <= 2, "temperature", "in [0, 2]"),
        (p.top_p is None or 0 < p.top_p <= 1, "top_p", "in (0, 1]"),
        (p.stream_idle_timeout > 0, "stream_idle_timeout", "positive"),
        (p.call_timeout > 0, "call_timeout", "positive"),
    ]
    for ok, key, rule in rules:
        _require(ok, f"{where}.{key}", f"must be {rule}")


def compaction_misfit(c: CompactionSettings, window: int) -> str | None:
    """Why budgets ``c`` cannot compact in ``window`` (None: they can), as config validation
    says it: a retained tail or a state that alone reaches the threshold would make every pass
    refuse."""
    problem = misfit(c, window)
    return None if problem is None else str(problem)


def _refuse(problems: list[Problem]) -> None:
    if problems:
        raise ConfigError(str(problems[0]))


def _require(ok: bool, key: str, rule: str) -> None:
    if not ok:
        raise ConfigError(f"config key {key} {rule}")


def _merge(
    into: dict[str, dict[str, Any]],
    layer: Mapping[str, Any],
    *,
    origin: str,
    origins: dict[str, str] | None = None,
) -> None:
    for section, values in layer.items():
        fields = SECTIONS.get(section)
        if fields is None:
            raise ConfigError(unknown_section(section, values, SECTIONS, origin))
        if not isinstance(values, Mapping):
            raise ConfigError(f"config [{section}] in {origin} must be a table")
        known = set(fields.__struct_fields__)
        for key, value in values.items():
            if key not in known:
                raise ConfigError(unknown_key(section, key, SECTIONS, origin))
            if (section, key) == ("mcp", "servers") and isinstance(value, Mapping):
                # servers add up by name across layers (a later one of the same name replaces it)
                if origins is not None:
                    origins.update({f"mcp.servers.{name}": origin for name in value})
                below = into.get(section, {}).get(key)
                value = {**below, **value} if isinstance(below, Mapping) else value
            into.setdefault(section, {})[key] = value
            if origins is not None:
                origins[f"{section}.{key}"] = origin
