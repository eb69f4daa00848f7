"""What the model sees next, and what the session has cost: the data of ``/context`` and ``/cost``
for every face (the web's context panel and header; the TUI's commands).

``context_report(session, …)`` splits the next request into its parts, in model order: the
system prompt and the tool schemas of the latest ``request/header``, then the surface nodes,
each an index checkpoint (a *stub*), the *state* checkpoint, or a message of the *tail* (the
conversation kept verbatim). Every figure is spec §3's heuristic, so the parts add up to
``heuristic_tokens``; ``used_tokens`` is ``Session.measure()`` (provider-anchored when it can be),
the figure compaction acts on. ``cost_estimate`` prices the logged usage of conversation calls
with a per-model list price, or says it cannot (``usd is None``) for a model it has no price for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dsh.events import (
    CompactionSummaryEvent,
    Event,
    RequestContextEvent,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    is_checkpoint_event,
    surface_message,
)
from dsh.surface import Session
from dsh.surface.tokens import system_tokens, tools_tokens
from dsh.transcript.stats import SessionStats, session_stats

Part = Literal["system", "tools", "stubs", "state", "tail"]
PREVIEW_CHARS = 100


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens."""

    input: float
    """Uncached input (a cache miss)."""
    cache_read: float
    cache_write: float
    output: float


PRICES: Mapping[str, ModelPrice] = {
    # List prices from api-docs.deepseek.com (Models & Pricing, USD): an estimate only.
    "deepseek:deepseek-chat": ModelPrice(
        input=0.27, cache_read=0.07, cache_write=0.27, output=1.10
    ),
    "deepseek:deepseek-reasoner": ModelPrice(
        input=0.55, cache_read=0.14, cache_write=0.55, output=2.19
    ),
    # The keyless test double costs nothing.
    "scripted:*": ModelPrice(input=0.0, cache_read=0.0, cache_write=0.0, output=0.0),
}
"""Prices by ``provider:model`` (``provider:*`` for every model of a provider)."""


@dataclass(frozen=True, slots=True)
class ContextItem:
    seq: int
    part: Literal["stubs", "state", "tail"]
    role: str
    tokens: int
    preview: str


@dataclass(frozen=True, slots=True)
class CostEstimate:
    usd: float | None
    """None: no price is known for this provider and model."""
    price: ModelPrice | None
    basis: str
    """What was priced, in words."""


@dataclass(frozen=True, slots=True)
class ContextReport:
    provider: str | None
    model: str | None
    window: int
    used_tokens: int
    anchored: bool
    heuristic_tokens: int
    parts: dict[Part, int]
    counts: dict[Part, int]
    tools: tuple[tuple[str, int], ...]
    """Each tool schema's own heuristic price, by name."""
    items: tuple[ContextItem, ...]
    stats: SessionStats
    cost: CostEstimate

    @property
    def used_ratio(self) -> float | None:
        return self.used_tokens / self.window if self.window else None

    def public(self) -> dict[str, Any]:
        """The report as JSON-ready camelCase data."""
        price = self.cost.price
        return {
            "provider": self.provider,
            "model": self.model,
            "window": self.window,
            "usedTokens": self.used_tokens,
            "usedRatio": self.used_ratio,
            "anchored": self.anchored,
            "heuristicTokens": self.heuristic_tokens,
            "parts": [
                {"part": part, "tokens": tokens, "items": self.counts[part]}
                for part, tokens in self.parts.items()
            ],
            "tools": [{"name": name, "tokens": tokens} for name, tokens in self.tools],
            "items": [
                {
                    "seq": i.seq,
                    "part": i.part,
                    "role": i.role,
                    "tokens": i.tokens,
                    "preview": i.preview,
                }
                for i in self.items
            ],
            "cacheHitRatio": self.stats.cache_hit_ratio,
            "usage": {
                "modelCalls": self.stats.model_calls,
                "inputTokens": self.stats.input_tokens,
                "cacheReadTokens": self.stats.cache_read_tokens,
                "cacheWriteTokens": self.stats.cache_write_tokens,
                "outputTokens": self.stats.output_tokens,
            },
            "cost": {
                "usd": self.cost.usd,
                "basis": self.cost.basis,
                "price": None
                if price is None
                else {
                    "input": price.input,
                    "cacheRead": price.cache_read,
                    "cacheWrite": price.cache_write,
                    "output": price.output,
                },
            },
        }


def price_of(provider: str | None, model: str | None) -> ModelPrice | None:
    if provider is None:
        return None
    return PRICES.get(f"{provider}:{model}") or PRICES.get(f"{provider}:*")


def cost_estimate(stats: SessionStats, price: ModelPrice | None) -> CostEstimate:
    """The logged usage of conversation model calls at ``price`` (summariser calls excluded)."""
    basis = (
        f"{stats.model_calls} conversation calls: {stats.input_tokens} uncached input, "
        f"{stats.cache_read_tokens} cache-read, {stats.cache_write_tokens} cache-write and "
        f"{stats.output_tokens} output tokens"
    )
    if price is None:
        return CostEstimate(None, None, basis)
    usd = (
        stats.input_tokens * price.input
        + stats.cache_read_tokens * price.cache_read
        + stats.cache_write_tokens * price.cache_write
        + stats.output_tokens * price.output
    ) / 1_000_000
    return CostEstimate(usd, price, basis)


def context_report(
    session: Session,
    *,
    window: int,
    route: tuple[str, str] | None = None,
    stats: SessionStats | None = None,
) -> ContextReport:
    """The next request of ``session`` by part. ``window``: the context window when none is
    logged; ``route``: (provider, model) when no call has logged one; ``stats``: the session's
    ``session_stats`` if the caller keeps them (else they are summed here)."""
    contexts = session.of_type(RequestContextEvent)
    logged = contexts[-1].data if contexts else None
    header = session.request_header
    provider = logged.provider if logged else header.config.provider if header else None
    model = logged.model if logged else header.config.model if header else None
    if provider is None and route is not None:
        provider, model = route
    window = (logged.context_window if logged else None) or window
    parts: dict[Part, int] = {"system": 0, "tools": 0, "stubs": 0, "state": 0, "tail": 0}
    counts: dict[Part, int] = dict.fromkeys(parts, 0)
    tools: list[tuple[str, int]] = []
    if header is not None:
        parts["system"], counts["system"] = system_tokens(header.system), int(bool(header.system))
        parts["tools"], counts["tools"] = tools_tokens(header.tools), len(header.tools or ())
        tools = [(str(t.get("name", "?")), tools_tokens([t])) for t in header.tools or ()]
    items = [_item(session, seq) for seq in session.nodes]
    for item in items:
        parts[item.part] += item.tokens
        counts[item.part] += 1
    measured = session.measure()
    stats = stats if stats is not None else session_stats(session.events)
    return ContextReport(
        provider=provider,
        model=model,
        window=window,
        used_tokens=measured.total_tokens,
        anchored=measured.anchored,
        heuristic_tokens=sum(parts.values()),
        parts=parts,
        counts=counts,
        tools=tuple(tools),
        items=tuple(items),
        stats=stats,
        cost=cost_estimate(stats, price_of(provider, model)),
    )


def _item(session: Session, seq: int) -> ContextItem:
    event = session.events[seq]
    message = surface_message(event)  # type: ignore[arg-type]
    part: Literal["stubs", "state", "tail"] = "tail"
    if is_checkpoint_event(event):
        part = "stubs" if _checkpoint_kind(session.events, event.source_event_seqs) else "state"
    role = message.role if message is not None else "assistant"
    preview = _preview(message.content) if message is not None else ""
    return ContextItem(seq, part, role, session.node_tokens(seq), preview)


def _checkpoint_kind(events: Sequence[Event], sources: Sequence[int] | None) -> bool:
    """True for an index checkpoint (a stub), False for the state one (legacy: state)."""
    for source in sources or ():
        event = events[source]
        if isinstance(event, CompactionSummaryEvent):
            return event.data.kind == "index"
    return False


def _preview(content: Sequence[Any]) -> str:
    texts: list[str] = []
    for block in content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            texts.append(f"{block.name}({block.arguments})")
        elif isinstance(block, ToolResultBlock):
            texts.extend(b.text for b in block.content if isinstance(b, TextBlock))
    flat = " ".join(" ".join(texts).split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"
