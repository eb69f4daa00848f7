"""``GET /api/sessions/{id}/context`` and ``GET …/cost``: the model's view of a session and its
estimated cost (the context panel, the header, the composer's ``/context``), and its billed
tokens per model (the composer's ``/cost``), as ``dsh.agent.context_report`` and
``dsh.agent.billing`` compute them for every face (the terminal UI's ``/context`` and
``/cost``); this module only finds the session (open here, else read-only from the store), the
fold that keeps its reports current (the handle's, else the registry's for stored sessions) and
the route: the one its next turn here runs on (``dsh.web.next_route``), else the server's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

from dsh.agent.billing import CostReport, render_cost
from dsh.agent.context_fold import ContextFold
from dsh.agent.context_report import context_report, session_cost_report
from dsh.agent.runtime import Route
from dsh.agent.wiring import session_window
from dsh.errors import DshError
from dsh.surface import Session
from dsh.web.errors import from_dsh_error
from dsh.web.next_route import next_route
from dsh.web.sessions import SessionRegistry, check_session_id

T = TypeVar("T")


async def _resolved_route(registry: SessionRegistry) -> Route | None:
    """The server's route, or None when it cannot be resolved (no key); in a worker thread (one
    not resolved yet, at the server's start, is tried again: it may ask its server)."""
    resolve = getattr(registry.runtime, "route", None)
    if resolve is None:
        return None
    try:
        route: Route = await anyio.to_thread.run_sync(resolve)
    except DshError:
        return None
    return route


async def _with_fold(
    registry: SessionRegistry, session_id: str, read: Callable[[Session, ContextFold], T]
) -> T:
    """``read`` of the session and its fold: on the loop for a session open here (read between
    appends), else in a worker thread holding the stored session and the registry's fold."""
    handle = registry.handles.get(check_session_id(session_id))
    if handle is not None:
        return read(handle.session, handle.context)

    def stored() -> T:
        with (
            registry.readers.held(session_id) as session,
            registry.stored_context.held(session_id) as fold,
        ):
            return read(session, fold)

    try:
        return await anyio.to_thread.run_sync(stored)
    except DshError as exc:
        raise from_dsh_error(exc) from exc


async def session_context(registry: SessionRegistry, session_id: str) -> dict[str, Any]:
    """The context report as JSON, with ``routeNotice``. It shows the model and window of the
    session's next turn here (``dsh.web.next_route``: the model ``/model`` moved it to, a window
    this server's flags or config give it) until that turn logs them; its cost stays priced by
    the model its log names. A next route that cannot be resolved leaves the log's."""
    upcoming = await next_route(registry, check_session_id(session_id))
    window = registry.runtime.default_window()
    resolved = await _resolved_route(registry)  # once: an unresolvable route is tried once per ask
    route = (resolved.provider.name, resolved.model) if resolved is not None else None
    # what resolving it found (no window reported, or one too small); shown by the model name
    notice = {"routeNotice": resolved.notice if resolved is not None else None}

    def read(session: Session, fold: ContextFold) -> dict[str, Any]:
        if upcoming is None:
            return context_report(session, default_window=window, route=route, fold=fold).public()
        report = context_report(
            session, window=session_window(upcoming), route=route, fold=fold
        ).public()
        return {**report, "provider": upcoming.provider.name, "model": upcoming.model}

    return {**await _with_fold(registry, session_id, read), **notice}


async def session_cost(registry: SessionRegistry, session_id: str) -> dict[str, Any]:
    """``/cost``: the billed tokens per provider:model (conversation calls and summaries) with
    their list-price estimates, and ``note``, the terminal UI's ``/cost`` text of them."""
    report = await _with_fold(
        registry, session_id, lambda session, fold: session_cost_report(session, fold=fold)
    )
    return _public_cost(report)


def _public_cost(report: CostReport) -> dict[str, Any]:
    return {
        "bills": [
            {
                "provider": bill.provider,
                "model": bill.model,
                "role": bill.role,
                "calls": bill.calls,
                "uncachedTokens": bill.uncached,
                "cacheReadTokens": bill.cache_read,
                "cacheWriteTokens": bill.cache_write,
                "outputTokens": bill.output,
                "usd": bill.cost,
            }
            for bill in report.bills
        ],
        "usd": report.cost,
        "note": render_cost(report),
    }
