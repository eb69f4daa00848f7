"""Figures about a session, computed from its log alone (``dsh sessions stats``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dsh.events import (
    AssistantMessageEvent,
    CompactionEndEvent,
    CompactionSummaryEvent,
    Event,
    RequestErrorEvent,
    StepStartEvent,
    ToolCallEvent,
    TurnStartEvent,
)


@dataclass(frozen=True, slots=True)
class SessionStats:
    events: int
    turns: int
    steps: int
    model_calls: int
    failed_calls: int
    tool_calls: int
    input_tokens: int
    """Uncached input tokens (provider figures; cache reads excluded)."""
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    compactions: int
    """Compaction brackets that ended without error."""
    summarizer_input_tokens: int
    summarizer_output_tokens: int

    @property
    def cache_hit_ratio(self) -> float | None:
        """Cached input / all input, over conversation calls; None without usage figures."""
        total = self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
        return self.cache_read_tokens / total if total else None


def session_stats(events: Iterable[Event]) -> SessionStats:
    counts = dict.fromkeys(
        (
            "events",
            "turns",
            "steps",
            "calls",
            "failed",
            "tools",
            "inp",
            "read",
            "write",
            "out",
            "compactions",
            "s_in",
            "s_out",
        ),
        0,
    )
    for event in events:
        counts["events"] += 1
        if isinstance(event, TurnStartEvent):
            counts["turns"] += 1
        elif isinstance(event, StepStartEvent):
            counts["steps"] += 1
        elif isinstance(event, ToolCallEvent):
            counts["tools"] += 1
        elif isinstance(event, RequestErrorEvent):
            counts["calls"] += 1
            counts["failed"] += 1
        elif isinstance(event, AssistantMessageEvent) and event.surface_op == "append":
            counts["calls"] += 1
            usage = event.data.usage
            if usage is not None:
                counts["inp"] += usage.input_tokens
                counts["read"] += usage.cache_read_tokens or 0
                counts["write"] += usage.cache_write_tokens or 0
                counts["out"] += usage.output_tokens
        elif isinstance(event, CompactionEndEvent) and event.data.error is None:
            counts["compactions"] += 1
        elif isinstance(event, CompactionSummaryEvent) and event.data.usage is not None:
            usage = event.data.usage
            counts["s_in"] += usage.request_tokens()
            counts["s_out"] += usage.output_tokens
    return SessionStats(
        events=counts["events"],
        turns=counts["turns"],
        steps=counts["steps"],
        model_calls=counts["calls"],
        failed_calls=counts["failed"],
        tool_calls=counts["tools"],
        input_tokens=counts["inp"],
        cache_read_tokens=counts["read"],
        cache_write_tokens=counts["write"],
        output_tokens=counts["out"],
        compactions=counts["compactions"],
        summarizer_input_tokens=counts["s_in"],
        summarizer_output_tokens=counts["s_out"],
    )


def render_stats(stats: SessionStats) -> str:
    ratio = stats.cache_hit_ratio
    rows = [
        ("events", f"{stats.events}"),
        ("turns", f"{stats.turns}"),
        ("steps", f"{stats.steps}"),
        ("model calls", f"{stats.model_calls} ({stats.failed_calls} failed)"),
        ("tool calls", f"{stats.tool_calls}"),
        (
            "input tokens",
            f"{stats.input_tokens} uncached + {stats.cache_read_tokens} cache read"
            f" + {stats.cache_write_tokens} cache write",
        ),
        ("output tokens", f"{stats.output_tokens}"),
        ("cache-hit ratio", "n/a (no usage logged)" if ratio is None else f"{ratio:.1%}"),
        ("compactions", f"{stats.compactions}"),
        (
            "summarizer tokens",
            f"{stats.summarizer_input_tokens} in, {stats.summarizer_output_tokens} out",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
