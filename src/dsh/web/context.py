"""``GET /api/sessions/{id}/context``: the model's view of a session and its estimated cost, as
``dsh.agent.context_report`` computes them for every face; this module only finds the session
(open here, else read-only from the store) and the route's provider and model."""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from dsh.agent.context_report import context_report
from dsh.agent.runtime import Route
from dsh.errors import DshError
from dsh.surface import Session
from dsh.web.errors import from_dsh_error
from dsh.web.sessions import SessionRegistry, check_session_id


def _resolved_route(registry: SessionRegistry) -> Route | None:
    """The server's route, or None when it cannot be resolved (no key)."""
    resolve = getattr(registry.runtime, "route", None)
    if resolve is None:
        return None
    try:
        route: Route = resolve()
    except DshError:
        return None
    return route


def configured_route(registry: SessionRegistry) -> tuple[str, str] | None:
    """(provider, model) of the server's route, or None when it cannot be resolved (no key)."""
    route = _resolved_route(registry)
    return (route.provider.name, route.model) if route is not None else None


def route_notice(registry: SessionRegistry) -> str | None:
    """What resolving the route found that people should know (the server did not report its
    window, or reported one too small for the budgets); the page shows it by the model."""
    route = _resolved_route(registry)
    return route.notice if route is not None else None


async def session_context(registry: SessionRegistry, session_id: str) -> dict[str, Any]:
    handle = registry.handles.get(check_session_id(session_id))
    window = registry.runtime.default_window()
    route = configured_route(registry)
    notice = {"routeNotice": route_notice(registry)}
    if handle is not None:  # being written on this loop: read it here, between appends
        stats = handle.stats.update(handle.session.events)
        report = context_report(handle.session, default_window=window, route=route, stats=stats)
        return {**report.public(), **notice}

    def stored() -> dict[str, Any]:
        session: Session = registry.readers.get(session_id)
        return context_report(session, default_window=window, route=route).public()

    try:
        return {**await anyio.to_thread.run_sync(stored), **notice}
    except DshError as exc:
        raise from_dsh_error(exc) from exc
