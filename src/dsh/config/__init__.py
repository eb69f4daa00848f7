"""One ``Settings`` object, layered (docs/config.md).

Later layers win: defaults < ``$DSH_HOME/config.toml`` < ``./.dsh/config.toml`` < ``DSH_*``
environment variables < command-line flags. TOML keys are snake_case, in sections; environment
variables are ``DSH_<SECTION>_<KEY>`` (``DSH_COMPACTION_CHUNK_TOKENS=800``). Unknown keys are
refused by name, and so is a value of the wrong type or out of range.

A project's ``./.dsh/config.toml`` comes with the repository, so it is not trusted by default: it
may tighten the safety settings (``tools.approval``, ``tools.scrub_env``, ``provider.base_url``,
the key and the variable it is read from, ``provider.headers``, the summariser's route and key
variable; it may add ``tools.deny_commands`` but not ``tools.allow_commands``) but never loosen
them, nor start a program (an MCP server under ``[mcp.servers]``). A
loosening key or a server is ignored with a warning naming it (a key or a header's value is
never shown), until the user trusts that directory (``dsh trust``), which records it under
``[trust] directories`` in the user's own ``$DSH_HOME/config.toml`` with the file's digest: a
file changed since is untrusted again, with one warning (:mod:`dsh.config.trust`). Only the user
config may hold ``[trust]``.

Nor can an untrusted project config stop dsh: one that does not load (unreadable, not TOML, an
unknown section or key, a value refused) is ignored whole, with one warning naming the file and
the error, and dsh runs with the other layers (:mod:`dsh.config.project`). The user's own
config, the environment, the flags and a trusted project config (trusted as it is now) are
refused on any such error.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from dsh.config.command_rules import CommandRules
from dsh.config.environment import environment_layer
from dsh.config.headers import check_header_types, header_problems
from dsh.config.layers import merge_layer
from dsh.config.mcp_servers import check_servers, validate_server
from dsh.config.project import (
    ProjectConfigError,
    ProjectLayer,
    project_layer,
    restrict_project_layer,
)
from dsh.config.provider_keys import provider_from_keys
from dsh.config.reading import dsh_home, read_toml
from dsh.config.rules import (
    BASE_URL_RULE,
    MODEL_NAME_RULE,
    Problem,
    base_url_problem,
    base_url_problems,
    compaction_problems,
    misfit,
    model_name_problem,
    redact,
    session_problems,
)
from dsh.config.sections import (
    APPROVAL_STRICTNESS,
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_CALLS_PER_REPLY,
    DEFAULT_MAX_REPEATED_CALLS,
    ENVIRONMENT_NAMES,
    LARGE_WINDOW_CHUNK,
    LARGE_WINDOW_STATE,
    LARGE_WINDOW_STUB,
    MAX_CONTEXT_WINDOW,
    MIN_CONTEXT_WINDOW,
    MIN_SUMMARIZER_WINDOW,
    SECTIONS,
    SUMMARIZER_WINDOW_RULE,
    USER_ONLY_SECTIONS,
    WINDOW_CEILING_RULE,
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
    UiSettings,
    summarizer_window_too_small,
    window_too_large,
    window_too_small,
)
from dsh.config.trust import (
    TrustState,
    is_trusted,
    set_trust,
    trust_records,
    trust_state,
    trusted_directories,
)
from dsh.config.wording import check_named_tables, describe
from dsh.errors import ConfigError

__all__ = [
    "APPROVAL_STRICTNESS",
    "BASE_URL_RULE",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_CALLS_PER_REPLY",
    "DEFAULT_MAX_REPEATED_CALLS",
    "ENVIRONMENT_NAMES",
    "LARGE_WINDOW_CHUNK",
    "LARGE_WINDOW_STATE",
    "LARGE_WINDOW_STUB",
    "MAX_CONTEXT_WINDOW",
    "MIN_CONTEXT_WINDOW",
    "MIN_SUMMARIZER_WINDOW",
    "MODEL_NAME_RULE",
    "SECTIONS",
    "SUMMARIZER_WINDOW_RULE",
    "USER_ONLY_SECTIONS",
    "WINDOW_CEILING_RULE",
    "WINDOW_RULE",
    "CompactionOverride",
    "CompactionSettings",
    "McpServerSettings",
    "McpSettings",
    "Problem",
    "ProjectConfigError",
    "ProviderOverride",
    "ProviderSettings",
    "RecallSettings",
    "Settings",
    "StoreSettings",
    "ToolChoice",
    "ToolSettings",
    "TrustSettings",
    "TrustState",
    "UiSettings",
    "base_url_problem",
    "compaction_misfit",
    "compaction_problems",
    "dsh_home",
    "is_trusted",
    "load_settings",
    "model_name_problem",
    "redact",
    "restrict_project_layer",
    "session_problems",
    "set_trust",
    "summarizer_window_too_small",
    "trust_records",
    "trust_state",
    "trusted_directories",
    "validate_settings",
    "window_too_large",
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
    trust_project: bool = False,
    choose_provider: bool = False,
) -> Settings:
    """Merge every layer into one validated ``Settings``.

    ``choose_provider`` (a face starting a new session): when nothing names the route and only
    another provider's key than the default's is set, take that provider, with one warning
    (:mod:`dsh.config.provider_keys`).

    An untrusted project config that does not load (unreadable, not TOML, an unknown section
    or key, a value refused alone or with the other layers) is ignored whole, with one warning
    naming the file and the error: a cloned repository cannot keep dsh from starting. A
    trusted one is refused like the user's own config (trust is pinned to the file's content,
    so a file edited since it was trusted is untrusted again). ``trust_project``: load the
    project config as if it were trusted as it is now (``dsh trust`` checks it loads before
    trusting it)."""
    env = os.environ if environ is None else environ
    below: dict[str, dict[str, Any]] = {}
    origins: dict[str, str] = {}
    """``section.key`` → where its value came from (an error names it)."""
    user_path = dsh_home(env) / "config.toml"
    if user_path.exists():  # a directory there is refused by name, not skipped
        merge_layer(below, read_toml(user_path), origin=str(user_path), origins=origins)
    workspace = (cwd or Path.cwd()).resolve()
    project = project_layer(workspace, below, user_path, trust_project)
    environment = environment_layer(
        env, SECTIONS, skip=ENVIRONMENT_NAMES, refuse=USER_ONLY_SECTIONS
    )
    flags = {k: dict(v) for k, v in (overrides or {}).items()}
    keys = env if choose_provider else None
    if project is None:
        return _settled(below, origins, None, environment, flags, keys)
    try:
        settings = _settled(below, origins, project, environment, flags, keys)
    except ConfigError as exc:
        if project.trusted and not trust_project:
            raise
        # the others' errors raise
        settings = _settled(below, origins, None, environment, flags, keys)
        problem = ProjectConfigError(project.path, exc)
        if trust_project:
            raise problem from exc
        log.warning("%s", problem.ignored())
        return settings
    for line in project.warnings:  # said once the file is known to apply
        log.warning("%s", line)
    return settings


def _settled(
    below: Mapping[str, Mapping[str, Any]],
    below_origins: Mapping[str, str],
    project: ProjectLayer | None,
    environment: Mapping[str, Mapping[str, Any]],
    flags: Mapping[str, Mapping[str, Any]],
    keys: Mapping[str, str] | None = None,
) -> Settings:
    """The layers merged over the user config ``below`` and validated; ``ConfigError`` naming
    where a refused value was set. ``keys``: the environment whose API keys choose the provider
    when nothing names one (None: they do not)."""
    merged = {section: dict(values) for section, values in below.items()}
    origins = dict(below_origins)
    if project is not None:
        merge_layer(merged, project.layer, origin=str(project.path), origins=origins)
    merge_layer(merged, environment, origin="environment")
    for section, values in environment.items():
        for key in values:
            origins[f"{section}.{key}"] = "environment variable " + f"DSH_{section}_{key}".upper()
    if flags:
        merge_layer(merged, flags, origin="command line", origins=origins)
    chosen = provider_from_keys(merged.get("provider", {}), keys) if keys is not None else None
    if chosen is not None:
        merged["provider"] = {**merged.get("provider", {}), "name": chosen[0]}
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
    if chosen is not None:  # said once the settings stand
        log.warning("%s", chosen[1])
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


def validate_settings(settings: Settings) -> None:
    """Range checks that a type cannot express; each error names the offending key."""
    _refuse(base_url_problems(settings))
    if settings.provider.model is not None:
        unnamed = model_name_problem(settings.provider.model)
        _require(unnamed is None, "provider.model", unnamed or "")
    _refuse(compaction_problems(settings.compaction))
    for name in settings.compaction.overrides:
        provider, _, model = name.rpartition(":")
        merged = settings.compaction.for_route(provider, model)
        _refuse(compaction_problems(merged, f'compaction.overrides."{name}"'))
    recall = settings.recall
    _require(recall.read_budget_chars >= 50, "recall.read_budget_chars", "must be at least 50")
    _require(1 <= recall.search_limit <= 200, "recall.search_limit", "must be in [1, 200]")
    after = settings.ui.notify_after_seconds
    _require(after >= 0, "ui.notify_after_seconds", "must be at least 0")
    repeats = settings.tools.max_repeated_calls
    _require(repeats == 0 or repeats >= 2, "tools.max_repeated_calls", "must be 0 or at least 2")
    per_reply = settings.tools.max_calls_per_reply
    _require(per_reply >= 0, "tools.max_calls_per_reply", "must be at least 1, or 0 for no limit")
    window = settings.provider.context_window
    _require(not window_too_small(window), "provider.context_window", WINDOW_RULE)
    _require(not window_too_large(window), "provider.context_window", WINDOW_CEILING_RULE)
    for key, variable in (
        ("provider.api_key_env", settings.provider.api_key_env),
        ("compaction.summarizer_api_key_env", settings.compaction.summarizer_api_key_env),
    ):
        named = variable is None or _VARIABLE_NAME.fullmatch(variable) is not None
        _require(named, key, "must be an environment variable name (letters, digits and _)")
    _refuse(header_problems(settings.provider.headers))
    CommandRules.of(settings.tools.allow_commands, settings.tools.deny_commands)
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
        (
            p.max_output_tokens is None or p.max_output_tokens >= 1,
            "max_output_tokens",
            "at least 1",
        ),
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
