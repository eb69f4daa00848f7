"""What the model sees next and what the session has cost, for every face: the TUI's
``/context`` and ``/cost`` (``render_context``, ``render_cost``) and the web's context panel and
header (``ContextReport.public()``).

``context_report(session, …)`` splits the next request into its parts, in model order: the
system prompt and the tool schemas, then the surface nodes, each an index checkpoint (a *stub*),
the *state* checkpoint, or a message of the *tail* (the conversation kept verbatim). Every size is
the token heuristic (docs/architecture.md, "Token accounting"), so the parts add up to
``heuristic_tokens``; ``used_tokens`` is
``Session.measure()`` (provider-anchored when it can be), the figure compaction acts on. Billed
tokens are the providers' own usage figures from the log, priced with the one list-price table,
``dsh.llm.prices`` (shared with the bench); a provider without a list price is not estimated.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dsh.events import (
    AssistantMessageEvent,
    CompactionSummaryEvent,
    Event,
    ModelSource,
    RequestContextEvent,
    RequestHeaderBody,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
    is_checkpoint_event,
    surface_message,
)
from dsh.llm.prices import DEFAULT_PRICES, Price
from dsh.surface import Session, summary_of_node
from dsh.surface.tokens import system_tokens, tools_tokens
from dsh.transcript.stats import SessionStats, session_stats

PartName = Literal["system", "tools", "stubs", "state", "tail"]
NodePart = Literal["stubs", "state", "tail"]
PREVIEW_CHARS = 100

PRICE_RULE_OF_PROVIDER = {
    "deepseek": "deepseek",
    "openai": "openai",
    "anthropic": "anthropic",
    "scripted": "deepseek",
}
"""Which list price bills a provider's calls: the scripted model's simulated cache follows
DeepSeek's rule, so it is priced as DeepSeek; others (a local server) have no list price."""


def price_of(provider: str | None) -> Price | None:
    """The list price that bills ``provider``'s calls, or None when none is known."""
    rule = PRICE_RULE_OF_PROVIDER.get(provider or "")
    return DEFAULT_PRICES[rule] if rule is not None else None


# ---- context ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Part:
    """One part of the next request: how many items and their heuristic tokens."""

    name: PartName
    items: int
    tokens: int


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One surface node of the next request."""

    seq: int
    part: NodePart
    role: str
    tokens: int
    preview: str


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """The session's conversation calls at one list price."""

    usd: float | None
    """None: no price is known for this provider."""
    price: Price | None
    basis: str
    """What was priced, in words."""


@dataclass(frozen=True, slots=True)
class ContextReport:
    provider: str | None
    model: str | None
    window: int | None
    used_tokens: int
    """``Session.measure``: the provider's last figure plus what came since, if it applies."""
    anchored: bool
    parts: tuple[Part, ...]
    """system, tools, stubs (index checkpoints), state (the state checkpoint), tail (verbatim)."""
    tools: tuple[tuple[str, int], ...]
    """Each tool schema's own heuristic price, by name."""
    items: tuple[ContextItem, ...]
    stats: SessionStats
    calls: int
    """Conversation model calls that reported usage."""
    last_call: Usage | None
    cost: CostEstimate

    @property
    def heuristic_tokens(self) -> int:
        return sum(part.tokens for part in self.parts)

    @property
    def part_tokens(self) -> dict[PartName, int]:
        return {part.name: part.tokens for part in self.parts}

    @property
    def counts(self) -> dict[PartName, int]:
        return {part.name: part.items for part in self.parts}

    @property
    def used_ratio(self) -> float | None:
        return self.used_tokens / self.window if self.window else None

    @property
    def cache_read(self) -> int:
        return self.stats.cache_read_tokens

    @property
    def request_tokens(self) -> int:
        """All input tokens of the conversation calls (uncached + cache read + cache write)."""
        stats = self.stats
        return stats.input_tokens + stats.cache_read_tokens + stats.cache_write_tokens

    @property
    def cache_ratio(self) -> float | None:
        return self.stats.cache_hit_ratio

    def public(self) -> dict[str, Any]:
        """The report as JSON-ready camelCase data (the web's ``GET …/context``)."""
        stats = self.stats
        return {
            "provider": self.provider,
            "model": self.model,
            "window": self.window,
            "usedTokens": self.used_tokens,
            "usedRatio": self.used_ratio,
            "anchored": self.anchored,
            "heuristicTokens": self.heuristic_tokens,
            "parts": [{"part": p.name, "tokens": p.tokens, "items": p.items} for p in self.parts],
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
            "cacheHitRatio": stats.cache_hit_ratio,
            "usage": {
                "modelCalls": stats.model_calls,
                "inputTokens": stats.input_tokens,
                "cacheReadTokens": stats.cache_read_tokens,
                "cacheWriteTokens": stats.cache_write_tokens,
                "outputTokens": stats.output_tokens,
            },
            "cost": {
                "usd": self.cost.usd,
                "basis": self.cost.basis,
                "price": _public_price(self.cost.price),
            },
        }


def _public_price(price: Price | None) -> dict[str, float] | None:
    """US$ per million tokens of each kind."""
    if price is None:
        return None
    return {
        "input": price.input,
        "cacheRead": price.input * price.cache_read,
        "cacheWrite": price.input * price.cache_write,
        "output": price.output,
    }


def context_report(
    session: Session,
    *,
    window: int | None = None,
    default_window: int | None = None,
    header: RequestHeaderBody | None = None,
    route: tuple[str, str] | None = None,
    stats: SessionStats | None = None,
) -> ContextReport:
    """The next request of ``session`` by part.

    ``window``: the next request's window when the caller knows it (the TUI's live route), else
    the latest logged one, else ``default_window``. ``header``: what the next request carries
    (the agent's ``current_header()``), else the latest logged one; with neither, system and tools
    count 0. ``route``: (provider, model) when neither the log nor the header names one.
    ``stats``: the session's ``session_stats`` if the caller keeps them."""
    contexts = session.of_type(RequestContextEvent)
    logged = contexts[-1].data if contexts else None
    header = header or session.request_header
    provider = logged.provider if logged else header.config.provider if header else None
    model = logged.model if logged else header.config.model if header else None
    if provider is None and route is not None:
        provider, model = route
    window = window or (logged.context_window if logged else None) or default_window
    system = header.system if header is not None else None
    schemas = (header.tools if header is not None else None) or ()
    items = tuple(_item(session, seq) for seq in session.nodes)
    parts = [
        Part("system", 1 if system else 0, system_tokens(system)),
        Part("tools", len(schemas), tools_tokens(schemas)),
    ]
    for name in ("stubs", "state", "tail"):
        of_part = [item.tokens for item in items if item.part == name]
        parts.append(Part(name, len(of_part), sum(of_part)))
    measured = session.measure()
    stats = stats if stats is not None else session_stats(session.events)
    calls = _conversation_usages(session.events)
    usages = [usage for _, usage in calls]
    if {source for source, _ in calls} <= {provider}:
        cost = cost_estimate(stats, price_of(provider))
    else:  # calls of other providers than the latest route's: each at its own price
        cost = _cost_by_provider(stats, calls, price_of(provider))
    return ContextReport(
        provider=provider,
        model=model,
        window=window,
        used_tokens=measured.total_tokens,
        anchored=measured.anchored,
        parts=tuple(parts),
        tools=tuple((str(t.get("name", "?")), tools_tokens([t])) for t in schemas),
        items=items,
        stats=stats,
        calls=len(usages),
        last_call=usages[-1] if usages else None,
        cost=cost,
    )


def _item(session: Session, seq: int) -> ContextItem:
    event = session.events[seq]
    message = surface_message(event)  # type: ignore[arg-type]
    part: NodePart = "tail"
    if is_checkpoint_event(event):
        summary = summary_of_node(session.events, seq)
        part = "stubs" if summary is not None and summary.data.kind == "index" else "state"
    role = message.role if message is not None else "assistant"
    preview = _preview(message.content) if message is not None else ""
    return ContextItem(seq, part, role, session.node_tokens(seq), preview)


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


def _conversation_usages(events: Iterable[Event]) -> list[tuple[str | None, Usage]]:
    """The usage of each conversation call, with the provider that answered it."""
    return [
        (_provider_of(e), e.data.usage)
        for e in events
        if isinstance(e, AssistantMessageEvent)
        and e.surface_op == "append"
        and e.data.usage is not None
    ]


def _provider_of(event: AssistantMessageEvent) -> str | None:
    source = event.data.message.source
    return source.provider if isinstance(source, ModelSource) else None


def _cost_by_provider(
    stats: SessionStats, calls: Sequence[tuple[str | None, Usage]], price: Price | None
) -> CostEstimate:
    """A session that changed provider: each call at its provider's list price (as
    ``cost_report`` bills them), calls of a provider without one not estimated."""
    usd: float | None = None
    unpriced = 0
    for provider, usage in calls:
        own = price_of(provider)
        if own is None:
            unpriced += 1
            continue
        read, write = usage.cache_read_tokens or 0, usage.cache_write_tokens or 0
        usd = (usd or 0.0) + own.cost(
            input_tokens=usage.request_tokens(),
            read=read,
            write=write,
            output_tokens=usage.output_tokens,
        )
    basis = cost_estimate(stats, None).basis + ", each provider's calls at its list prices"
    if unpriced:
        basis += f" ({unpriced} call(s) of a provider without a list price not estimated)"
    return CostEstimate(usd, price, basis)


def cost_estimate(stats: SessionStats, price: Price | None) -> CostEstimate:
    """The logged usage of conversation model calls at ``price`` (summariser calls excluded)."""
    basis = (
        f"{stats.model_calls} conversation calls: {stats.input_tokens} uncached input, "
        f"{stats.cache_read_tokens} cache-read, {stats.cache_write_tokens} cache-write and "
        f"{stats.output_tokens} output tokens"
    )
    if price is None:
        return CostEstimate(None, None, basis)
    read, write = stats.cache_read_tokens, stats.cache_write_tokens
    usd = price.cost(
        input_tokens=stats.input_tokens + read + write,
        read=read,
        write=write,
        output_tokens=stats.output_tokens,
    )
    return CostEstimate(usd, price, f"{basis}, at {price.model} list prices")


def render_context(report: ContextReport) -> str:
    width = max(len(part.name) for part in report.parts)
    lines = ["What the model sees in the next request (heuristic tokens):"]
    for part in report.parts:
        lines.append(f"  {part.name:<{width}}  {part.tokens:>8,}  {_items(part)}")
    lines.append(f"  {'total':<{width}}  {report.heuristic_tokens:>8,}")
    share = ""
    if report.window:
        share = f" ({100 * report.used_tokens / report.window:.0f}% of {report.window:,})"
    lines.append(f"Measured for compaction: {report.used_tokens:,} tokens{share}.")
    last = report.last_call
    if last is None:
        lines.append("Cache hits: no model call yet.")
    else:
        ratio = report.cache_ratio or 0.0
        lines.append(
            f"Cache hits so far: {report.cache_read:,} of {report.request_tokens:,} input tokens "
            f"({ratio:.0%}) over {report.calls} call(s); last call "
            f"{last.cache_read_tokens or 0:,} of {last.request_tokens():,}."
        )
    return "\n".join(lines)


def _items(part: Part) -> str:
    nouns = {
        "system": "prompt",
        "tools": "tool schema",
        "stubs": "index checkpoint",
        "state": "state checkpoint",
        "tail": "message",
    }
    noun = nouns.get(part.name, "item")
    return f"{part.items} {noun}{'' if part.items == 1 else 's'}"


# ---- cost ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bill:
    """Billed tokens of one provider:model, for conversation calls or summaries."""

    provider: str
    model: str
    role: str
    """``conversation`` or ``summaries``."""
    calls: int
    uncached: int
    cache_read: int
    cache_write: int
    output: int
    price: Price | None
    """The list price the estimate uses (None: no known price for this provider)."""

    @property
    def cost(self) -> float | None:
        if self.price is None:
            return None
        request = self.uncached + self.cache_read + self.cache_write
        return self.price.cost(
            input_tokens=request,
            read=self.cache_read,
            write=self.cache_write,
            output_tokens=self.output,
        )


@dataclass(frozen=True, slots=True)
class CostReport:
    bills: tuple[Bill, ...]

    @property
    def cost(self) -> float | None:
        """The priced bills' total (None when nothing could be priced)."""
        costs = [b.cost for b in self.bills if b.cost is not None]
        return sum(costs) if costs else None


def cost_report(events: Iterable[Event]) -> CostReport:
    """Billed tokens per provider:model from the logged usage: conversation calls (their
    ``assistant/message`` usage) and model-written summaries (``compaction/summary`` usage)."""
    totals: dict[tuple[str, str, str], list[int]] = {}
    for event in events:
        key: tuple[str, str, str] | None = None
        usage: Usage | None = None
        if isinstance(event, AssistantMessageEvent) and event.surface_op == "append":
            source = event.data.message.source
            if isinstance(source, ModelSource) and event.data.usage is not None:
                key, usage = (source.provider, source.model, "conversation"), event.data.usage
        elif isinstance(event, CompactionSummaryEvent) and event.data.usage is not None:
            key, usage = (event.data.provider, event.data.model, "summaries"), event.data.usage
        if key is None or usage is None:
            continue
        row = totals.setdefault(key, [0, 0, 0, 0, 0])
        row[0] += 1
        row[1] += usage.input_tokens
        row[2] += usage.cache_read_tokens or 0
        row[3] += usage.cache_write_tokens or 0
        row[4] += usage.output_tokens
    bills = tuple(
        Bill(
            provider,
            model,
            role,
            calls=calls,
            uncached=uncached,
            cache_read=read,
            cache_write=write,
            output=output,
            price=price_of(provider),
        )
        for (provider, model, role), (calls, uncached, read, write, output) in totals.items()
    )
    return CostReport(bills)


def render_cost(report: CostReport) -> str:
    if not report.bills:
        return "No billed tokens yet: no model call has reported usage."
    lines = ["Billed tokens (the providers' usage figures):"]
    for bill in report.bills:
        lines.append(
            f"  {bill.provider}:{bill.model} ({bill.role}, {bill.calls} call(s)): "
            f"input {bill.uncached:,} uncached + {bill.cache_read:,} cache read + "
            f"{bill.cache_write:,} cache write, output {bill.output:,}"
        )
        lines.append(f"    {_estimate(bill)}")
    total = report.cost
    if total is not None:
        lines.append(f"Estimated total: ${total:.4f} (list prices; your plan may differ).")
    return "\n".join(lines)


def _estimate(bill: Bill) -> str:
    price = bill.price
    if price is None or bill.cost is None:
        return f"no list price known for provider {bill.provider!r}: not estimated"
    basis = (
        f"{price.model} list prices"
        if price.model == bill.model
        else (f"priced at {price.model} list prices")
    )
    return (
        f"≈ ${bill.cost:.4f} ({basis}: ${price.input}/M input, "
        f"{price.cache_read:g}× for cache reads, ${price.output}/M output)"
    )
