"""``context_report`` and ``/cost``'s bills computed from the whole log, as they were before
``ContextFold``: every node's item made again, the figures counted over every event, every
conversation call priced again, every call billed again. The fold's tests hold the incremental
reports equal to them; ``benchmarks/context_report.py`` and ``benchmarks/cost_report.py`` time
them as the baselines."""

from __future__ import annotations

from collections.abc import Iterable

from dsh.agent.billing import Bill, CostEstimate, CostReport, cost_estimate, price_of
from dsh.agent.context_fold import context_item
from dsh.agent.context_report import ContextReport, Part
from dsh.events import (
    AssistantMessageEvent,
    CompactionSummaryEvent,
    Event,
    ModelSource,
    RequestContextEvent,
    RequestHeaderBody,
    Usage,
)
from dsh.surface import Session
from dsh.surface.tokens import system_tokens, tools_tokens
from dsh.transcript.stats import SessionStats, session_stats


def whole_log_report(
    session: Session,
    *,
    window: int | None = None,
    default_window: int | None = None,
    header: RequestHeaderBody | None = None,
    route: tuple[str, str] | None = None,
) -> ContextReport:
    events = session.events
    contexts = [e for e in events if isinstance(e, RequestContextEvent)]
    logged = contexts[-1].data if contexts else None
    header = header or session.request_header
    provider = logged.provider if logged else header.config.provider if header else None
    model = logged.model if logged else header.config.model if header else None
    if provider is None and route is not None:
        provider, model = route
    window = window or (logged.context_window if logged else None) or default_window
    system = header.system if header is not None else None
    schemas = (header.tools if header is not None else None) or ()
    items = tuple(context_item(session, seq) for seq in session.nodes)
    parts = [
        Part("system", 1 if system else 0, system_tokens(system)),
        Part("tools", len(schemas), tools_tokens(schemas)),
    ]
    for name in ("stubs", "state", "tail"):
        of_part = [item.tokens for item in items if item.part == name]
        parts.append(Part(name, len(of_part), sum(of_part)))  # type: ignore[arg-type]
    measured = session.measure()
    stats = session_stats(events)
    calls = [
        (e.data.message.source, e.data.usage)
        for e in events
        if isinstance(e, AssistantMessageEvent)
        and e.surface_op == "append"
        and e.data.usage is not None
    ]
    priced = [
        ((s.provider, s.model) if isinstance(s, ModelSource) else (None, None), u) for s, u in calls
    ]
    if {source for source, _ in priced} <= {(provider, model)}:
        cost = cost_estimate(stats, price_of(provider, model))
    else:
        cost = _each_at_its_price(stats, priced, (provider, model))
    return ContextReport(
        provider=provider,
        model=model,
        window=window,
        used_tokens=measured.total_tokens,
        anchored=measured.anchored,
        calibration=measured.calibration,
        parts=tuple(parts),
        tools=tuple((str(t.get("name", "?")), tools_tokens([t])) for t in schemas),
        items=items,
        stats=stats,
        calls=len(priced),
        last_call=priced[-1][1] if priced else None,
        cost=cost,
    )


def _each_at_its_price(
    stats: SessionStats,
    calls: list[tuple[tuple[str | None, str | None], Usage]],
    route: tuple[str | None, str | None],
) -> CostEstimate:
    usd: float | None = None
    unpriced = 0
    for source, usage in calls:
        own = price_of(*source)
        if own is None:
            unpriced += 1
            continue
        usd = (usd or 0.0) + own.cost(
            input_tokens=usage.request_tokens(),
            read=usage.cache_read_tokens or 0,
            write=usage.cache_write_tokens or 0,
            output_tokens=usage.output_tokens,
        )
    basis = cost_estimate(stats, None).basis + ", each model's calls at its list prices"
    if unpriced:
        basis += f" ({unpriced} call(s) of a model without a known list price not estimated)"
    return CostEstimate(usd, price_of(*route), basis)


def whole_log_cost_report(events: Iterable[Event]) -> CostReport:
    """Billed tokens per provider:model and role, in the order a scan of the log meets them;
    a conversation call logged without usage counts only as unreported."""
    totals: dict[tuple[str, str, str], list[int]] = {}
    for event in events:
        key: tuple[str, str, str] | None = None
        usage: Usage | None = None
        if isinstance(event, AssistantMessageEvent) and event.surface_op == "append":
            source = event.data.message.source
            if isinstance(source, ModelSource):
                key, usage = (source.provider, source.model, "conversation"), event.data.usage
        elif isinstance(event, CompactionSummaryEvent) and event.data.usage is not None:
            key, usage = (event.data.provider, event.data.model, "summaries"), event.data.usage
        if key is None:
            continue
        row = totals.setdefault(key, [0, 0, 0, 0, 0, 0])
        if usage is None:
            row[5] += 1
            continue
        row[0] += 1
        row[1] += usage.input_tokens
        row[2] += usage.cache_read_tokens or 0
        row[3] += usage.cache_write_tokens or 0
        row[4] += usage.output_tokens
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
                calls,
                uncached,
                read,
                write,
                output,
                unreported,
            ) in totals.items()
        )
    )
