"""What the model sees next and what the session has cost, for every face: the TUI's
``/context`` (``render_context``) and the web's context panel and header
(``ContextReport.public()``); the TUI's ``/cost`` bills are ``dsh.agent.billing``'s, kept by the
same fold (``session_cost_report``).

``context_report(session, …)`` splits the next request into its parts, in model order: the
system prompt and the tool schemas, then the surface nodes, each an index checkpoint (a *stub*),
the *state* checkpoint, or a message of the *tail* (the conversation kept verbatim). Every size is
the token heuristic (docs/architecture.md, "Token accounting"), so the parts add up to
``heuristic_tokens``; ``used_tokens`` is
``Session.measure()`` (provider-anchored when it can be, what the provider has not counted
calibrated by its count of the last request: ``calibration``), the figure compaction acts on. Billed
tokens are the providers' own usage figures from the log, priced with the one list-price table
(``dsh.agent.billing``). What it reads from the whole log is a ``ContextFold``: a face that keeps
one pays for what was appended since its last report, not for the session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from dsh.events import RequestContextEvent, RequestHeaderBody, Usage
from dsh.llm.prices import Price
from dsh.surface import Calibration, Session
from dsh.surface.calibration import calibration_note
from dsh.surface.tokens import system_tokens, tools_tokens
from dsh.transcript.stats import SessionStats

from .billing import CostEstimate, CostReport
from .context_fold import NODE_PARTS, ContextFold, ContextItem

PartName = Literal["system", "tools", "stubs", "state", "tail"]


@dataclass(frozen=True, slots=True)
class Part:
    """One part of the next request: how many items and their heuristic tokens."""

    name: PartName
    items: int
    tokens: int


@dataclass(frozen=True, slots=True)
class ContextReport:
    provider: str | None
    model: str | None
    window: int | None
    used_tokens: int
    """``Session.measure``: the provider's last figure plus what came since, if it applies."""
    anchored: bool
    calibration: Calibration | None
    """The provider's count of its last request against dsh's heuristic of it, which scaled
    the heuristic parts of ``used_tokens`` (None: nothing to go by)."""
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
            "calibration": _public_ratio(self.calibration),
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


def _public_ratio(calibrated: Calibration | None) -> float | None:
    """The ratio the heuristic is scaled by, rounded to two places."""
    return None if calibrated is None else round(float(calibrated.ratio), 2)


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
    fold: ContextFold | None = None,
) -> ContextReport:
    """The next request of ``session`` by part.

    ``window``: the next request's window when the caller knows it (the TUI's live route), else
    the latest logged one, else ``default_window``. ``header``: what the next request carries
    (the agent's ``current_header()``), else the latest logged one; with neither, system and tools
    count 0. ``route``: (provider, model) when neither the log nor the header names one.
    ``fold``: the caller's ``ContextFold`` of this session, brought up to date here (none: one
    made for this report)."""
    fold = (fold if fold is not None else ContextFold()).update(session)
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
    parts = [
        Part("system", 1 if system else 0, system_tokens(system)),
        Part("tools", len(schemas), tools_tokens(schemas)),
    ]
    parts.extend(Part(name, *fold.part_sums(name)) for name in NODE_PARTS)
    measured = session.measure()
    stats = fold.stats
    return ContextReport(
        provider=provider,
        model=model,
        window=window,
        used_tokens=measured.total_tokens,
        anchored=measured.anchored,
        calibration=measured.calibration,
        parts=tuple(parts),
        tools=tuple((str(t.get("name", "?")), tools_tokens([t])) for t in schemas),
        items=fold.items,
        stats=stats,
        calls=fold.calls.calls,
        last_call=fold.calls.last,
        cost=fold.calls.estimate(stats, provider, model),
    )


def session_cost_report(session: Session, *, fold: ContextFold | None = None) -> CostReport:
    """``/cost``'s bills of ``session``: ``billing.cost_report`` of its log, from ``fold`` (the
    caller's ``ContextFold`` of this session, brought up to date here; none: one made for this
    report, which reads the per-type index, not the log; neither makes the surface's items)."""
    kept = fold if fold is not None else ContextFold()
    return kept.update(session, items=False).bills.report()


def render_context(report: ContextReport) -> str:
    width = max(len(part.name) for part in report.parts)
    lines = ["What the model sees in the next request (heuristic tokens):"]
    for part in report.parts:
        lines.append(f"  {part.name:<{width}}  {part.tokens:>8,}  {_items(part)}")
    lines.append(f"  {'total':<{width}}  {report.heuristic_tokens:>8,}")
    share = ""
    if report.window:
        share = f" ({100 * report.used_tokens / report.window:.0f}% of {report.window:,})"
    note = calibration_note(report.calibration)
    counted = f"; {note}" if note else ""
    lines.append(f"Measured for compaction: {report.used_tokens:,} tokens{share}{counted}.")
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


def next_request_tokens(session: Session, header: RequestHeaderBody | None) -> int:
    """The size of the next request as a status line shows it: the session's measure, with the
    system prompt and tools ``header`` carries (the agent's ``current_header()``) in place of
    the latest logged header's. After a pass landed while idle (a ``/compact``), the next
    request carries the recall tools the logged header does not: the TUI's status bar said
    ~297 tokens less than ``/context`` until the next request was logged. The difference is
    calibrated as the measure is."""
    measured = session.measure()
    logged = session.request_header
    if header is None or logged is None:
        return measured.total_tokens
    return measured.total_tokens + measured.scale(_fixed_tokens(header) - _fixed_tokens(logged))


def _fixed_tokens(header: RequestHeaderBody) -> int:
    return system_tokens(header.system) + tools_tokens(header.tools)
