"""The session's spend so far in a few words, always in view: the terminal UI's status bar and
the web page's header (``$0.0420 · 183k tok``).

It is ``/cost``'s figure (``dsh.agent.billing.CostReport``, kept by the face's ``ContextFold``):
the estimated total of every bill with a known list price, and every billed token (uncached,
cache-read and cache-write input, and output; conversation calls and model-written summaries
alike). No price is made up: a session none of whose models has a list price shows its tokens
alone, and one with some unpriced calls shows the priced total marked ``+`` (more was spent than
the figure says)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsh.agent.billing import CostReport


@dataclass(frozen=True, slots=True)
class Spend:
    usd: float | None
    """The priced bills' total, as ``/cost``'s ``Estimated total`` (None: nothing priced)."""
    tokens: int
    """Every billed token."""
    unpriced: bool = False
    """Some bill has no known list price: ``usd`` leaves it out."""


def spend_of(report: CostReport) -> Spend:
    """The spend of ``report``'s bills."""
    tokens = sum(b.uncached + b.cache_read + b.cache_write + b.output for b in report.bills)
    unpriced = any(b.price is None and b.calls for b in report.bills)
    return Spend(report.cost, tokens, unpriced)


def short_tokens(count: int) -> str:
    """``950``, ``12.3k``, ``183k``, ``1.2M``."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        size, unit = count / 1000, "k"
    else:
        size, unit = count / 1_000_000, "M"
    shown = f"{size:.1f}" if size < 100 else f"{size:.0f}"
    return shown.removesuffix(".0") + unit


def money(usd: float) -> str:
    """``$0.0420`` (``/cost``'s four decimals), ``$12.35`` from ten dollars up."""
    return f"${usd:.4f}" if usd < 10 else f"${usd:.2f}"


def spend_text(spend: Spend) -> str | None:
    """``$0.0420 · 183k tok``; ``183k tok`` when nothing is priced; None before any call
    reported usage."""
    if not spend.tokens:
        return None
    tokens = f"{short_tokens(spend.tokens)} tok"
    if spend.usd is None:
        return tokens
    return f"{money(spend.usd)}{'+' if spend.unpriced else ''} · {tokens}"


def public_spend(report: CostReport) -> dict[str, Any]:
    """``{usd, tokens, text}`` for the web's header (``text``: ``spend_text``, None before any
    usage)."""
    spend = spend_of(report)
    return {"usd": spend.usd, "tokens": spend.tokens, "text": spend_text(spend)}
