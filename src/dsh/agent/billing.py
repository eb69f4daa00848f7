"""What a session's model calls cost, for every face: the estimate beside the web's context
panel and the TUI's ``/context`` (``ConversationCalls``, ``cost_estimate``), and the TUI's
``/cost`` bills per provider:model (``BilledTokens``, ``cost_report``, ``render_cost``).

Billed tokens are the providers' own usage figures from the log, priced with the one list-price
table, ``dsh.llm.prices`` (shared with the bench); a provider without a list price is not
estimated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from dsh.events import (
    AssistantMessageEvent,
    CompactionSummaryEvent,
    Event,
    ModelSource,
    Usage,
)
from dsh.llm.prices import DEFAULT_PRICES, MODEL_PRICES, Price
from dsh.transcript.stats import SessionStats

PRICE_RULE_OF_PROVIDER = {
    "deepseek": "deepseek",
    "openai": "openai",
    "anthropic": "anthropic",
    "scripted": "deepseek",
}
"""Which list price bills a provider's calls: the scripted model's simulated cache follows
DeepSeek's rule, so it is priced as DeepSeek; others (a local server) have no list price."""

PRICED_MODELS = {
    "deepseek": ("deepseek-chat", "deepseek-reasoner"),
    "openai": ("gpt-4.1",),
    "anthropic": ("claude-sonnet-5-5", "claude-sonnet-5", "claude-sonnet-4-5"),
}
"""The models each list price is the price of (``deepseek-reasoner`` costs what
``deepseek-chat`` does); a dated snapshot of one (``claude-sonnet-4-5-20250929``) is that model.
Another model of the provider (``gpt-4.1-mini``, ``claude-opus-4-1``) has no known price here,
rather than a wrong one."""
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)")


def price_of(provider: str | None, model: str | None) -> Price | None:
    """The list price that bills ``provider``'s calls to ``model``, or None when none is known.
    The scripted model is priced as DeepSeek's whatever it is named (it stands in for it)."""
    rule = PRICE_RULE_OF_PROVIDER.get(provider or "")
    if rule is None:
        return None
    if provider == "scripted":
        return DEFAULT_PRICES[rule]
    name = _priced_name(model, PRICED_MODELS[rule])
    if name is None:
        return None
    return MODEL_PRICES.get(name, DEFAULT_PRICES[rule])


def _priced_name(model: str | None, names: tuple[str, ...]) -> str | None:
    """The name in ``names`` that ``model`` is (itself or a dated snapshot of it)."""
    if model is None:
        return None
    for name in names:
        if model == name or (
            model.startswith(name) and _SNAPSHOT.fullmatch(model, len(name)) is not None
        ):
            return name
    return None


# ---- the estimate beside the context -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """The session's conversation calls at one list price."""

    usd: float | None
    """None: no price is known for this provider."""
    price: Price | None
    basis: str
    """What was priced, in words."""


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


@dataclass(slots=True)
class ConversationCalls:
    """The conversation calls that reported usage (append-origin ``assistant/message`` events
    with usage), fed in log order: how many, the last one's usage, the providers that answered
    them, and each call priced at its own provider's list price (summed in log order, so the
    sum is the same however the feeding was split)."""

    calls: int = 0
    last: Usage | None = None
    routes: set[tuple[str | None, str | None]] = field(default_factory=set)
    """The (provider, model) pairs that answered."""
    usd: float | None = None
    """The priced calls' sum; None while no call was priced."""
    unpriced: int = 0
    """Calls of a model without a known list price."""

    def feed(self, event: AssistantMessageEvent) -> None:
        usage = event.data.usage
        if event.surface_op != "append" or usage is None:
            return
        source = event.data.message.source
        route = (source.provider, source.model) if isinstance(source, ModelSource) else (None, None)
        self.calls += 1
        self.last = usage
        self.routes.add(route)
        own = price_of(*route)
        if own is None:
            self.unpriced += 1
            return
        self.usd = (self.usd or 0.0) + own.cost(
            input_tokens=usage.request_tokens(),
            read=usage.cache_read_tokens or 0,
            write=usage.cache_write_tokens or 0,
            output_tokens=usage.output_tokens,
        )

    def estimate(
        self, stats: SessionStats, provider: str | None, model: str | None
    ) -> CostEstimate:
        """The calls at the list price of ``provider:model`` (the latest route's) when it
        answered them all; after a switch each call at its own model's price (as
        ``cost_report`` bills them), calls of a model without a known one not estimated."""
        price = price_of(provider, model)
        if self.routes <= {(provider, model)}:
            return cost_estimate(stats, price)
        basis = cost_estimate(stats, None).basis + ", each model's calls at its list prices"
        if self.unpriced:
            basis += (
                f" ({self.unpriced} call(s) of a model without a known list price not estimated)"
            )
        return CostEstimate(self.usd, price, basis)


# ---- /cost ---------------------------------------------------------------------------------


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
    """The list price the estimate uses (None: no known price for this model)."""
    unreported: int = 0
    """Conversation calls logged without a usage figure (cancelled or failed mid-stream, or a
    server that sends none): not in ``calls`` nor in any token count."""

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


class BilledTokens:
    """``cost_report``'s figures kept as the log is read: fed the log's ``assistant/message``
    and ``compaction/summary`` events, each type in log order (in any number of calls; the two
    types may be fed one after the other, as from the per-type index), its ``report()`` equals
    ``cost_report`` over the whole log. Each bill keeps the seq of its first call, and bills are
    listed in that order, the order a scan of the log meets them."""

    __slots__ = ("_rows",)

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str, str], list[int]] = {}
        """Per (provider, model, role): [first seq, calls, uncached, read, write, output,
        calls without usage]."""

    def feed(self, event: Event) -> None:
        """Count ``event`` if it bills a model call (any other event is ignored)."""
        key: tuple[str, str, str] | None = None
        usage: Usage | None = None
        if isinstance(event, AssistantMessageEvent):
            source = event.data.message.source
            usage = event.data.usage
            if event.surface_op == "append" and isinstance(source, ModelSource):
                key = (source.provider, source.model, "conversation")
        elif isinstance(event, CompactionSummaryEvent):
            usage = event.data.usage
            key = (event.data.provider, event.data.model, "summaries")
        if key is None or (usage is None and key[2] == "summaries"):
            return
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = [event.seq, 0, 0, 0, 0, 0, 0]
        if usage is None:
            row[6] += 1
            return
        row[1] += 1
        row[2] += usage.input_tokens
        row[3] += usage.cache_read_tokens or 0
        row[4] += usage.cache_write_tokens or 0
        row[5] += usage.output_tokens

    def report(self) -> CostReport:
        """The bills so far, in the order of their first call."""
        rows = sorted(self._rows.items(), key=lambda item: item[1][0])
        return CostReport(
            tuple(
                Bill(
                    provider,
                    model,
                    role,
                    calls=calls,
                    uncached=uncached,
                    cache_read=read,
                    cache_write=write,
                    output=output,
                    price=price_of(provider, model),
                    unreported=unreported,
                )
                for (provider, model, role), (
                    _,
                    calls,
                    uncached,
                    read,
                    write,
                    output,
                    unreported,
                ) in rows
            )
        )


def cost_report(events: Iterable[Event]) -> CostReport:
    """Billed tokens per provider:model from the logged usage: conversation calls (their
    ``assistant/message`` usage) and model-written summaries (``compaction/summary`` usage),
    from a scan of ``events``. A face that shows it again and again keeps a ``BilledTokens``
    instead (``ContextFold.bills``: ``dsh.agent.context_report.session_cost_report``)."""
    billed = BilledTokens()
    for event in events:
        billed.feed(event)
    return billed.report()


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
        if bill.unreported:
            lines.append(
                f"    {bill.unreported} more call(s) reported no usage (cancelled or failed "
                "mid-stream, or the server sends none): not counted"
            )
    total = report.cost
    if total is not None:
        lines.append(f"Estimated total: ${total:.4f} (list prices; your plan may differ).")
    return "\n".join(lines)


def _estimate(bill: Bill) -> str:
    price = bill.price
    if price is None or bill.cost is None:
        return f"no list price known for {bill.provider}:{bill.model}: not estimated"
    basis = (
        f"{price.model} list prices"
        if price.model == bill.model
        else (f"priced at {price.model} list prices")
    )
    return (
        f"≈ ${bill.cost:.4f} ({basis}: ${price.input}/M input, "
        f"{price.cache_read:g}× for cache reads, ${price.output}/M output)"
    )
