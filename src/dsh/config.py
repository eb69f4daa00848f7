"""One ``Settings`` object, layered (spec §9).

Later layers win: defaults < ``$DSH_HOME/config.toml`` < ``./.dsh/config.toml`` < ``DSH_*``
environment variables < command-line flags. TOML keys are snake_case, in sections; environment
variables are ``DSH_<SECTION>_<KEY>`` (``DSH_COMPACTION_CHUNK_TOKENS=800``). Unknown keys are
refused by name, and so is a value of the wrong type or out of range.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec
import platformdirs

from dsh.errors import ConfigError


class _Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class ProviderSettings(_Section, frozen=True):
    name: str = "deepseek"
    model: str | None = None
    base_url: str | None = None
    context_window: int | None = None
    api_key: str | None = None


class CompactionOverride(_Section, frozen=True):
    """Budgets for one model, under ``[compaction.overrides."provider:model"]``."""

    threshold_ratio: float | None = None
    retain_ratio: float | None = None
    retain_tokens: int | None = None
    chunk_tokens: int | None = None
    stub_tokens: int | None = None
    state_max_tokens: int | None = None
    stub_region_ratio: float | None = None
    low_watermark_ratio: float | None = None


class CompactionSettings(_Section, frozen=True):
    backend: Literal["recallable", "basic", "off"] = "recallable"
    threshold_ratio: float = 0.8
    low_watermark_ratio: float = 0.4
    retain_ratio: float = 0.16
    retain_tokens: int | None = None
    chunk_tokens: int = 4000
    stub_tokens: int = 200
    state_max_tokens: int = 4096
    max_concurrency: int = 32
    stub_region_ratio: float = 0.3
    min_stale_ratio: float = 0.0625
    summarizer: str = "extractive"
    summarizer_timeout_s: float = 120.0
    compaction_retries: int = 1
    max_overflow_retries: int = 1
    prune_threshold_chars: int = 8192
    prune_head_chars: int = 4096
    prune_tail_chars: int = 1024
    overrides: dict[str, CompactionOverride] = {}

    def for_route(self, provider: str, model: str) -> CompactionSettings:
        """These settings with the override for ``provider:model`` (or ``model``) applied."""
        override = self.overrides.get(f"{provider}:{model}") or self.overrides.get(model)
        if override is None:
            return self
        changes = {k: v for k, v in msgspec.structs.asdict(override).items() if v is not None}
        return msgspec.structs.replace(self, **changes)


class RecallSettings(_Section, frozen=True):
    read_budget_chars: int = 8000
    search_limit: int = 25


class ToolSettings(_Section, frozen=True):
    approval: Literal["ask", "auto", "read-only"] = "ask"


class StoreSettings(_Section, frozen=True):
    backend: Literal["jsonl", "sqlite"] = "jsonl"


class Settings(_Section, frozen=True):
    provider: ProviderSettings = ProviderSettings()
    compaction: CompactionSettings = CompactionSettings()
    recall: RecallSettings = RecallSettings()
    tools: ToolSettings = ToolSettings()
    store: StoreSettings = StoreSettings()


DESCRIPTIONS: dict[str, str] = {
    "provider.name": "deepseek, openai, anthropic, openai-compatible, scripted or replay.",
    "provider.model": "Model name; each provider has a default.",
    "provider.base_url": "Endpoint of an OpenAI-compatible server (Ollama, vLLM, llama.cpp).",
    "provider.context_window": "Override the model's context window (tokens).",
    "provider.api_key": "API key; prefer the provider's environment variable. Never logged.",
    "compaction.backend": "recallable (index stubs + state, recall tools), basic, or off.",
    "compaction.threshold_ratio": "Compact when the next request reaches window × this.",
    "compaction.low_watermark_ratio": "A pressure pass compacts down to about window × this "
    "(hysteresis: the next crossing is far away).",
    "compaction.retain_ratio": "Keep at least window × this of recent history verbatim.",
    "compaction.retain_tokens": "Keep at least this many tokens verbatim (overrides the ratio).",
    "compaction.chunk_tokens": "Recallable: target size of the slice one index stub covers.",
    "compaction.stub_tokens": "Recallable: size of one index stub (≤ chunk_tokens / 4).",
    "compaction.state_max_tokens": "Cap of the state checkpoint (and of a basic summary).",
    "compaction.max_concurrency": "Recallable: summary calls run at once within a pass.",
    "compaction.stub_region_ratio": "Recallable: once the frozen stubs fill window × this, "
    "the oldest are rolled up by code into one rollup checkpoint.",
    "compaction.min_stale_ratio": "Least stale history for a pressure pass: window × this, "
    "at most chunk_tokens / 2.",
    "compaction.summarizer_timeout_s": "Seconds a summariser model call may take.",
    "compaction.summarizer": "extractive (keyless, deterministic), a model name on the "
    "conversation's provider, or provider:model.",
    "compaction.overrides": 'Per-model budgets: [compaction.overrides."provider:model"] with '
    "threshold_ratio, low_watermark_ratio, retain_ratio, retain_tokens, chunk_tokens, "
    "stub_tokens, state_max_tokens, stub_region_ratio.",
    "compaction.compaction_retries": "Extra passes allowed when one pass leaves the context "
    "above the threshold.",
    "compaction.max_overflow_retries": "Retries of a request after a context-overflow error, "
    "per turn.",
    "compaction.prune_threshold_chars": "Tool results longer than this are pruned under pressure.",
    "compaction.prune_head_chars": "Characters kept from the start of a pruned result.",
    "compaction.prune_tail_chars": "Characters kept from the end of a pruned result.",
    "recall.read_budget_chars": "history_read page size in characters.",
    "recall.search_limit": "Default maximum snippets returned by history_search.",
    "tools.approval": "ask (interactive default), auto, or read-only.",
    "store.backend": "jsonl (one file per session) or sqlite (one database).",
}

SECTIONS: dict[str, type[_Section]] = {
    name: type(default) for name, default in msgspec.structs.asdict(Settings()).items()
}


def dsh_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$DSH_HOME`` if set, else the platform's user data directory for dsh."""
    env = os.environ if environ is None else environ
    value = env.get("DSH_HOME")
    return Path(value).expanduser() if value else Path(platformdirs.user_data_dir("dsh"))


def load_settings(
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Settings:
    """Merge every layer into one validated ``Settings``."""
    env = os.environ if environ is None else environ
    merged: dict[str, dict[str, Any]] = {}
    for path in (dsh_home(env) / "config.toml", (cwd or Path.cwd()) / ".dsh" / "config.toml"):
        if path.is_file():
            _merge(merged, _read_toml(path), origin=str(path))
    _merge(merged, _environment_layer(env), origin="environment")
    if overrides:
        _merge(merged, {k: dict(v) for k, v in overrides.items()}, origin="command line")
    try:
        settings = msgspec.convert(merged, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid configuration: {_describe(exc)}") from exc
    validate_settings(settings)
    return settings


def validate_settings(settings: Settings) -> None:
    """Range checks that a type cannot express; each error names the offending key."""
    _validate_compaction(settings.compaction, "compaction")
    for name in settings.compaction.overrides:
        provider, _, model = name.rpartition(":")
        merged = settings.compaction.for_route(provider, model)
        _validate_compaction(merged, f'compaction.overrides."{name}"')
    recall = settings.recall
    _require(recall.read_budget_chars >= 50, "recall.read_budget_chars", "must be at least 50")
    _require(1 <= recall.search_limit <= 200, "recall.search_limit", "must be in [1, 200]")
    window = settings.provider.context_window
    _require(window is None or window > 0, "provider.context_window", "must be positive")
    if window is not None:
        _require_compactable(settings.compaction, window)
    provider, colon, model = settings.compaction.summarizer.partition(":")
    _require(
        not colon or bool(provider and model),
        "compaction.summarizer",
        "must be extractive, a model name, or provider:model with both parts",
    )


def _validate_compaction(c: CompactionSettings, where: str) -> None:
    rules = [
        (0 < c.threshold_ratio <= 1, "threshold_ratio", "must be in (0, 1]"),
        (0 <= c.retain_ratio < 1, "retain_ratio", "must be in [0, 1)"),
        (
            c.retain_ratio < c.threshold_ratio,
            "retain_ratio",
            "must be below threshold_ratio (the retained tail must fit under it)",
        ),
        (
            c.retain_ratio <= c.low_watermark_ratio < c.threshold_ratio,
            "low_watermark_ratio",
            "must be in [retain_ratio, threshold_ratio) (a pass compacts down to it)",
        ),
        (0 < c.min_stale_ratio < 1, "min_stale_ratio", "must be in (0, 1)"),
        (c.summarizer_timeout_s > 0, "summarizer_timeout_s", "must be positive"),
        (
            c.stub_region_ratio < c.threshold_ratio,
            "stub_region_ratio",
            "must be below threshold_ratio (the stubs must leave room under it)",
        ),
        (c.retain_tokens is None or c.retain_tokens >= 0, "retain_tokens", "must be >= 0"),
        (c.chunk_tokens >= 100, "chunk_tokens", "must be at least 100"),
        (c.stub_tokens >= 20, "stub_tokens", "must be at least 20"),
        (c.stub_tokens <= c.chunk_tokens // 4, "stub_tokens", "must be at most chunk_tokens / 4"),
        (c.state_max_tokens >= 100, "state_max_tokens", "must be at least 100"),
        (c.max_concurrency >= 1, "max_concurrency", "must be at least 1"),
        (0 < c.stub_region_ratio < 1, "stub_region_ratio", "must be in (0, 1)"),
        (c.compaction_retries >= 0, "compaction_retries", "must be non-negative"),
        (c.max_overflow_retries >= 0, "max_overflow_retries", "must be non-negative"),
        (
            c.prune_head_chars + c.prune_tail_chars < c.prune_threshold_chars,
            "prune_head_chars",
            "plus prune_tail_chars must be below prune_threshold_chars",
        ),
    ]
    for ok, key, rule in rules:
        _require(ok, f"{where}.{key}", rule)


def _require_compactable(c: CompactionSettings, window: int) -> None:
    """Refuse budgets that cannot compact in ``window``: a retained tail or a state that alone
    reaches the threshold would make every pass refuse."""
    threshold = int(window * c.threshold_ratio)
    if c.retain_tokens is not None:
        _require(
            c.retain_tokens < threshold,
            "compaction.retain_tokens",
            f"must be below the threshold ({threshold} tokens in a {window}-token window)",
        )
    _require(
        c.state_max_tokens + int(window * c.retain_ratio) < threshold,
        "compaction.state_max_tokens",
        f"plus the retained tail must be below the threshold ({threshold} tokens in a "
        f"{window}-token window)",
    )


def _require(ok: bool, key: str, rule: str) -> None:
    if not ok:
        raise ConfigError(f"config key {key} {rule}")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from exc


def _environment_layer(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    layer: dict[str, dict[str, Any]] = {}
    for name, value in env.items():
        if not name.startswith("DSH_") or name == "DSH_HOME":
            continue
        rest = name[4:].lower()
        section = next((s for s in SECTIONS if rest.startswith(s + "_")), None)
        if section is None:
            raise ConfigError(f"unknown environment variable {name} (no config section matches)")
        layer.setdefault(section, {})[rest[len(section) + 1 :]] = value
    return layer


def _merge(into: dict[str, dict[str, Any]], layer: Mapping[str, Any], *, origin: str) -> None:
    for section, values in layer.items():
        fields = SECTIONS.get(section)
        if fields is None:
            raise ConfigError(f"unknown config section [{section}] in {origin}")
        if not isinstance(values, Mapping):
            raise ConfigError(f"config [{section}] in {origin} must be a table")
        known = set(fields.__struct_fields__)
        for key, value in values.items():
            if key not in known:
                raise ConfigError(f"unknown config key {section}.{key} in {origin}")
            into.setdefault(section, {})[key] = value


def _describe(exc: msgspec.ValidationError) -> str:
    text = str(exc)
    if " - at `$." in text:
        message, _, where = text.partition(" - at `$.")
        return f"config key {where.rstrip('`')}: {message}"
    return text
