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


class CompactionSettings(_Section, frozen=True):
    backend: Literal["recallable", "basic", "off"] = "basic"
    threshold_ratio: float = 0.8
    retain_ratio: float = 0.16
    retain_tokens: int | None = None
    chunk_tokens: int = 4000
    stub_tokens: int = 200
    state_max_tokens: int = 4096
    max_concurrency: int = 8
    summarizer: str = "extractive"
    compaction_retries: int = 1
    max_overflow_retries: int = 1
    prune_threshold_chars: int = 8192
    prune_head_chars: int = 4096
    prune_tail_chars: int = 1024


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
    c = settings.compaction
    _require(0 < c.threshold_ratio <= 1, "compaction.threshold_ratio", "must be in (0, 1]")
    _require(0 <= c.retain_ratio < 1, "compaction.retain_ratio", "must be in [0, 1)")
    _require(
        c.retain_ratio < c.threshold_ratio,
        "compaction.retain_ratio",
        "must be below compaction.threshold_ratio (the retained tail must fit under it)",
    )
    _require(
        c.retain_tokens is None or c.retain_tokens >= 0,
        "compaction.retain_tokens",
        "must be non-negative",
    )
    _require(c.chunk_tokens >= 100, "compaction.chunk_tokens", "must be at least 100")
    _require(c.stub_tokens >= 20, "compaction.stub_tokens", "must be at least 20")
    _require(
        c.stub_tokens <= c.chunk_tokens // 4,
        "compaction.stub_tokens",
        "must be at most compaction.chunk_tokens / 4",
    )
    _require(c.state_max_tokens >= 100, "compaction.state_max_tokens", "must be at least 100")
    _require(c.max_concurrency >= 1, "compaction.max_concurrency", "must be at least 1")
    _require(c.compaction_retries >= 0, "compaction.compaction_retries", "must be non-negative")
    _require(c.max_overflow_retries >= 0, "compaction.max_overflow_retries", "must be non-negative")
    _require(
        settings.recall.read_budget_chars >= 50, "recall.read_budget_chars", "must be at least 50"
    )
    _require(1 <= settings.recall.search_limit <= 200, "recall.search_limit", "must be in [1, 200]")
    window = settings.provider.context_window
    _require(window is None or window > 0, "provider.context_window", "must be positive")


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
