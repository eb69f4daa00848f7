"""What one bench run is configured with: offline knobs, the simulated clock, cache-rule
parameters, and the online target (shared by the runner, the online probe and the report)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_SEEDS = (7, 11)
"""The headline seeds: every default run covers both."""
STEP_SECONDS = 20.0
"""Simulated time between two conversation requests (the clock TTLs and eviction run on)."""
DEEPSEEK_INTERVAL = 4096
"""DeepSeek rule (c): tokens between interval units (undocumented; the report shows others)."""
DEEPSEEK_INTERVALS = (None, 1024, 4096, 16384)
"""The intervals of the sensitivity table (None: rule (c) off)."""


def sensitivity_intervals(configured: int | None) -> list[int | None]:
    """The intervals the sensitivity table shows: the fixed set and the run's own (off first)."""
    values = {*DEEPSEEK_INTERVALS, configured}
    numbers: list[int | None] = [*sorted(v for v in values if v is not None)]
    return [None, *numbers] if None in values else numbers


def interval_name(value: int | None) -> str:
    return "off" if value is None else str(value)


@dataclass(frozen=True, slots=True)
class OnlineOptions:
    provider: str
    model: str
    questions: int = 3
    """Handoff-probe questions asked after each pass."""
    base_url: str | None = None
    """Endpoint (an OpenAI-compatible server, or the provider's own)."""
    api_key_env: str | None = None
    """The environment variable holding the key (``--api-key-env``, else ``[provider]
    api_key_env``; None: the provider's own variable, by ``dsh.llm.registry.route_api_key``)."""


@dataclass(frozen=True, slots=True)
class CacheOptions:
    deepseek_interval: int | None = DEEPSEEK_INTERVAL
    openai_evict_minutes: float | None = None
    """OpenAI: drop a cached prefix unused for this long (None: never)."""
    step_seconds: float = STEP_SECONDS


@dataclass(frozen=True, slots=True)
class RunOptions:
    latency_ms: int = 100
    """Simulated summariser latency per call (offline)."""
    prices: dict[str, Any] = field(default_factory=dict)
    online: OnlineOptions | None = None
    cache: CacheOptions = CacheOptions()
    compaction: dict[str, Any] = field(default_factory=dict)
    """Overrides of every scenario's ``[compaction]`` budgets, the same for every arm."""
