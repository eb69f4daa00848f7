"""Figures about a session, computed from its log alone (``dsh sessions stats``)."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsh.events import (
    AssistantMessageEvent,
    CompactionEndEvent,
    CompactionPlanEvent,
    CompactionSummaryEvent,
    Event,
    EventBase,
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
    """Compaction passes that committed: one per pass, whatever the number of checkpoints it
    wrote (its plan; a log from before plans were logged: each bracket that ended without
    error)."""
    summarizer_input_tokens: int
    summarizer_output_tokens: int

    @property
    def cache_hit_ratio(self) -> float | None:
        """Cached input / all input, over conversation calls; None without usage figures."""
        total = self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
        return self.cache_read_tokens / total if total else None


_FIGURED: tuple[type[EventBase], ...] = (
    AssistantMessageEvent,
    CompactionEndEvent,
    CompactionSummaryEvent,
)
"""The event types that carry figures beyond their count."""
_WITH_FIGURES = frozenset(_FIGURED)

_COUNTED: tuple[type[EventBase], ...] = (
    CompactionPlanEvent,
    TurnStartEvent,
    StepStartEvent,
    RequestErrorEvent,
    ToolCallEvent,
)
"""The event types whose number is a figure."""


def session_stats(events: Iterable[Event]) -> SessionStats:
    """The figures of ``events`` (a log, in order).

    Events are counted by type in one pass (``Counter`` over ``map(type, …)``, no Python code
    per event); only the events that carry figures beyond their count (assistant messages,
    compaction ends and summaries) are looked at one by one."""
    events = events if isinstance(events, Sequence) else list(events)
    counts = Counter(map(type, events))
    return _stats(len(events), counts, [e for e in events if type(e) in _WITH_FIGURES])


def stats_by_type(
    events: int, of_type: Callable[[type[EventBase]], Sequence[EventBase]]
) -> SessionStats:
    """``session_stats`` of a log of ``events`` events from its per-type index (``of_type``:
    ``Session.of_type``, the events of exactly one type in log order): it reads only the events
    that carry figures, never the whole log."""
    counts = {kind: len(of_type(kind)) for kind in _COUNTED}
    figured = itertools.chain.from_iterable(of_type(kind) for kind in _FIGURED)
    return _stats(events, counts, figured)


def add_stats(a: SessionStats, b: SessionStats) -> SessionStats:
    """The figures of two logs one after the other (every figure is a sum)."""
    return SessionStats(
        **{f.name: getattr(a, f.name) + getattr(b, f.name) for f in dataclasses.fields(a)}
    )


def _stats(events: int, counts: Mapping[Any, int], figured: Iterable[object]) -> SessionStats:
    """The figures from the number of events, the number of each type and the events with
    figures (any order: they are summed)."""
    inp = read = write = out = appended = compactions = s_in = s_out = 0
    for event in figured:
        if isinstance(event, AssistantMessageEvent):
            if event.surface_op == "append":
                # a failed stream's partial reply belongs to its request/error: one call
                appended += event.data.error_code is None
                usage = event.data.usage
                if usage is not None:
                    inp += usage.input_tokens
                    read += usage.cache_read_tokens or 0
                    write += usage.cache_write_tokens or 0
                    out += usage.output_tokens
        elif isinstance(event, CompactionEndEvent):
            # a pass with a plan is counted by its plan, its brackets (one per region) not
            compactions += event.data.error is None and event.data.pass_id is None
        elif isinstance(event, CompactionSummaryEvent) and event.data.usage is not None:
            s_in += event.data.usage.request_tokens()
            s_out += event.data.usage.output_tokens
    failed = counts.get(RequestErrorEvent, 0)
    return SessionStats(
        events=events,
        turns=counts.get(TurnStartEvent, 0),
        steps=counts.get(StepStartEvent, 0),
        model_calls=appended + failed,
        failed_calls=failed,
        tool_calls=counts.get(ToolCallEvent, 0),
        input_tokens=inp,
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=out,
        compactions=compactions + counts.get(CompactionPlanEvent, 0),
        summarizer_input_tokens=s_in,
        summarizer_output_tokens=s_out,
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
        ("compaction passes", f"{stats.compactions}"),
        (
            "summarizer tokens",
            f"{stats.summarizer_input_tokens} in, {stats.summarizer_output_tokens} out",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
