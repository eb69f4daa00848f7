"""``dsh compact ID [--focus TEXT]``: compact an idle stored session now.

A call with nothing to compact (no plan, no interrupted pass to finish) appends nothing: no
``command/run``/``command/done`` pair and no ``session/end-seed`` are logged for it.
"""

from __future__ import annotations

import asyncio

import click

from dsh.agent.runtime import resolve_route, summarizer_route
from dsh.cli import context
from dsh.compaction import (
    NOTHING_TO_COMPACT,
    CompactionEngine,
    make_backend,
    make_summarizer,
    run_compact_command,
)
from dsh.config import DEFAULT_CONTEXT_WINDOW, load_settings
from dsh.errors import UsageError
from dsh.events import RequestContext, RequestContextEvent
from dsh.surface import Session

DEFAULT_WINDOW = DEFAULT_CONTEXT_WINDOW


@click.command("compact")
@click.argument("session_id")
@click.option("--focus", default=None, help="What the summary should keep in focus.")
@click.option("--summarizer", default=None, help="extractive (keyless) or a model name.")
@click.option("--compaction", type=click.Choice(["recallable", "basic"]), default=None)
def compact(
    session_id: str, focus: str | None, summarizer: str | None, compaction: str | None
) -> None:
    """Compact a stored, idle session and print what happened."""
    overrides: dict[str, dict[str, object]] = {"compaction": {}}
    if summarizer is not None:
        overrides["compaction"]["summarizer"] = summarizer
    if compaction is not None:
        overrides["compaction"]["backend"] = compaction
    settings = load_settings(overrides=overrides)
    store = context.store(settings)
    session = Session.open(store, context.resolve_session_id(store, session_id), writable=True)
    try:
        route = _route(session)
        budgets = settings.compaction
        if route is not None:  # the budgets the session's own model runs with
            budgets = budgets.for_route(route.provider, route.model)
        provider = None
        model = None
        if budgets.summarizer != "extractive":
            provider, model = summarizer_route(settings, resolve_route(settings, store=store))
        backend = make_backend(
            budgets, make_summarizer(budgets, provider, model, history=session.events)
        )
        if backend is None:
            raise UsageError("compaction.backend is off; choose --compaction basic or recallable")
        engine = CompactionEngine(session, backend, budgets)
        window = (
            (route.context_window if route is not None else None)
            or settings.provider.context_window
            or DEFAULT_WINDOW
        )
        if _nothing_to_compact(engine, window=window, focus=focus):
            ok, text = True, NOTHING_TO_COMPACT
        else:
            ok, text = asyncio.run(run_compact_command(engine, window=window, focus=focus))
    finally:
        session.close()
    click.echo(text)
    if not ok:
        raise SystemExit(1)


def _route(session: Session) -> RequestContext | None:
    """The provider, model and window the session last ran with (its latest route)."""
    for event in reversed(session.events):
        if isinstance(event, RequestContextEvent):
            return event.data
    return None


def _nothing_to_compact(engine: CompactionEngine, *, window: int, focus: str | None) -> bool:
    """True when ``compact_now`` would find nothing: idle, no interrupted pass, no plan."""
    if engine.turn_is_open() or engine.incomplete_plan() is not None:
        return False  # let the command run and say why (busy) or finish the pass
    plan = engine.backend.plan(
        engine.session,
        retain_tokens=engine.retain(window),
        focus=focus,
        reason="manual",
        window=window,
    )
    return plan is None
