"""What the model sees and what it cost, computed from a session (``/context``, ``/cost``).

Face-neutral: the TUI prints ``render_context`` / ``render_cost``; another face can show the
same figures from ``context_report`` / ``cost_report``. Sizes are the spec §3 heuristic (the
figure compaction prices with); billed tokens are the providers' own usage figures from the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dsh.events import (
    AssistantMessageEvent,
    CompactionSummaryEvent,
    Event,
    ModelSource,
    RequestHeaderBody,
    Usage,
    is_checkpoint_event,
)
from dsh.llm.prices import DEFAULT_PRICES, Price
from dsh.surface import Session, summary_of_node
from dsh.surface.tokens import system_tokens, tools_tokens

PRICE_RULE_OF_PROVIDER = {
    "deepseek": "deepseek",
    "openai": "openai",
    "anthropic": "anthropic",
    "scripted": "deepseek",
}
"""Which list price bills a provider's calls: the scripted model's simulated cache follows
DeepSeek's rule, so it is priced as DeepSeek; others (a local server) have no list price."""


@dataclass(frozen=True, slots=True)
class Part:
    """One part of the next request: how many items and their heuristic tokens."""

    name: str
    items: int
    tokens: int


@dataclass(frozen=True, slots=True)
class ContextReport:
    parts: tuple[Part, ...]
    """system, tools, stubs (index checkpoints), state (the state checkpoint), tail (verbatim)."""
    measured_tokens: int
    """``Session.measure``: the provider's last figure plus what came since, if it applies."""
    window: int | None
    calls: int
    """Conversation model calls with usage so far."""
    cache_read: int
    request_tokens: int
    """All input tokens of those calls (uncached + cache read + cache write)."""
    last_call_read: int | None
    last_call_tokens: int | None

    @property
    def total(self) -> int:
        return sum(part.tokens for part in self.parts)

    @property
    def cache_ratio(self) -> float | None:
        return self.cache_read / self.request_tokens if self.request_tokens else None


def context_report(
    session: Session, *, window: int | None, header: RequestHeaderBody | None = None
) -> ContextReport:
    """The next request of ``session`` in parts. The system prompt and tools are ``header``'s
    (the agent's ``current_header()``: what the next request carries), else the latest logged
    header's; with neither (nothing sent yet) they count 0."""
    header = header or session.request_header
    system = header.system if header is not None else None
    tools = header.tools if header is not None else None
    stubs = state = tail = (0, 0)
    for seq in session.nodes:
        tokens = session.node_tokens(seq)
        event = session.events[seq]
        if is_checkpoint_event(event):
            summary = summary_of_node(session.events, seq)
            if summary is not None and summary.data.kind == "index":
                stubs = (stubs[0] + 1, stubs[1] + tokens)
            else:
                state = (state[0] + 1, state[1] + tokens)
        else:
            tail = (tail[0] + 1, tail[1] + tokens)
    parts = (
        Part("system", 1 if system else 0, system_tokens(system)),
        Part("tools", len(tools or ()), tools_tokens(tools)),
        Part("stubs", *stubs),
        Part("state", *state),
        Part("tail", *tail),
    )
    usages = _conversation_usages(session.events)
    last = usages[-1] if usages else None
    return ContextReport(
        parts=parts,
        measured_tokens=session.measure().total_tokens,
        window=window,
        calls=len(usages),
        cache_read=sum(u.cache_read_tokens or 0 for u in usages),
        request_tokens=sum(u.request_tokens() for u in usages),
        last_call_read=None if last is None else last.cache_read_tokens or 0,
        last_call_tokens=None if last is None else last.request_tokens(),
    )


def _conversation_usages(events: Iterable[Event]) -> list[Usage]:
    return [
        e.data.usage
        for e in events
        if isinstance(e, AssistantMessageEvent)
        and e.surface_op == "append"
        and e.data.usage is not None
    ]


def render_context(report: ContextReport) -> str:
    width = max(len(part.name) for part in report.parts)
    lines = ["What the model sees in the next request (heuristic tokens):"]
    for part in report.parts:
        lines.append(f"  {part.name:<{width}}  {part.tokens:>8,}  {_items(part)}")
    lines.append(f"  {'total':<{width}}  {report.total:>8,}")
    share = ""
    if report.window:
        share = f" ({100 * report.measured_tokens / report.window:.0f}% of {report.window:,})"
    lines.append(f"Measured for compaction: {report.measured_tokens:,} tokens{share}.")
    if report.calls == 0:
        lines.append("Cache hits: no model call yet.")
    else:
        ratio = report.cache_ratio or 0.0
        lines.append(
            f"Cache hits so far: {report.cache_read:,} of {report.request_tokens:,} input tokens "
            f"({ratio:.0%}) over {report.calls} call(s); last call "
            f"{report.last_call_read or 0:,} of {report.last_call_tokens or 0:,}."
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


# ---- cost ------------------------------------------------------------------------------------


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


def price_of(provider: str) -> Price | None:
    rule = PRICE_RULE_OF_PROVIDER.get(provider)
    return DEFAULT_PRICES[rule] if rule is not None else None


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
