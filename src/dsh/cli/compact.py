"""``dsh compact ID [--focus TEXT] [--backend B]``: compact an idle stored session now, with the
session's own recorded settings (``dsh.agent.session_settings``); ``--backend`` switches them.

A call with nothing to compact (no plan, no interrupted pass to finish) appends nothing: no
``command/run``/``command/done`` pair and no ``session/end-seed`` are logged for it.
"""

from __future__ import annotations

import asyncio

import click

from dsh.agent import session_settings
from dsh.agent.runtime import resolve_route, summarizer_route
from dsh.cli import context
from dsh.compaction import (
    NOTHING_TO_COMPACT,
    CompactionEngine,
    make_backend,
    make_summarizer,
    run_compact_command,
)
from dsh.config import DEFAULT_CONTEXT_WINDOW, Settings, load_settings
from dsh.errors import UsageError
from dsh.events import RequestContext, RequestContextEvent, SessionSettings
from dsh.store import EventStore
from dsh.surface import Session

DEFAULT_WINDOW = DEFAULT_CONTEXT_WINDOW


@click.command("compact")
@click.argument("session_id")
@click.option("--focus", default=None, help="What the summary should keep in focus.")
@click.option("--summarizer", default=None, help="extractive (keyless) or a model name.")
@click.option(
    "--backend",
    type=click.Choice(["recallable", "basic"]),
    default=None,
    help="Switch the session's compaction backend (it adopts the checkpoints it has).",
)
@click.option(
    "--compaction",
    type=click.Choice(["recallable", "basic"]),
    default=None,
    help="Compact with this backend; refused if it would mix layouts (see --backend).",
)
def compact(
    session_id: str,
    focus: str | None,
    summarizer: str | None,
    backend: str | None,
    compaction: str | None,
) -> None:
    """Compact a stored, idle session and print what happened."""
    if backend is not None and compaction is not None and backend != compaction:
        raise UsageError("--backend and --compaction name different backends; give one")
    flags: dict[str, dict[str, object]] = {"compaction": {}}
    if summarizer is not None:
        flags["compaction"]["summarizer"] = summarizer
    if (backend or compaction) is not None:
        flags["compaction"]["backend"] = backend or compaction
    settings = load_settings(overrides=flags)
    store = context.store(settings)
    session = Session.open(store, context.resolve_session_id(store, session_id), writable=True)
    try:
        ok, text = _compact(
            session, settings, flags, store=store, switch=backend is not None, focus=focus
        )
    finally:
        session.close()
    click.echo(text)
    if not ok:
        raise SystemExit(1)


def _compact(
    session: Session,
    settings: Settings,
    flags: dict[str, dict[str, object]],
    *,
    store: EventStore,
    switch: bool,
    focus: str | None,
) -> tuple[bool, str]:
    """Run the command on the open session with its own recorded settings (a log without them:
    the configured ones and the route it last ran with)."""
    recorded = session_settings.latest(session)
    resolved = session_settings.effective(
        settings,
        recorded,
        flags,
        switch=switch,
        checkpoints=session_settings.has_checkpoints(session.events),
    )
    if resolved.changes:
        changes = "; ".join(change.describe() for change in resolved.changes)
        context.warn(f"session {session.id}: the flags change its recorded settings: {changes}")
    settings = resolved.settings
    route = _route(session, recorded)
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
        raise UsageError("compaction.backend is off; choose --backend basic or recallable")
    engine = CompactionEngine(session, backend, budgets)
    window = (
        (route.context_window if route is not None else None)
        or settings.provider.context_window
        or DEFAULT_WINDOW
    )
    if _nothing_to_compact(engine, window=window, focus=focus):
        return True, NOTHING_TO_COMPACT
    if route is not None:
        workspace = recorded.workspace if recorded is not None else session.header.cwd
        snapshot = session_settings.snapshot(
            settings, route.provider, route.model, route.context_window, workspace
        )
        session_settings.record(session, snapshot)
    return asyncio.run(run_compact_command(engine, window=window, focus=focus))


def _route(session: Session, recorded: SessionSettings | None) -> RequestContext | None:
    """The provider, model and window the session runs with: recorded, else its latest
    logged route."""
    if recorded is not None:
        return RequestContext(
            provider=recorded.provider,
            model=recorded.model,
            context_window=recorded.context_window,
        )
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
