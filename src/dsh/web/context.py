"""``GET /api/sessions/{id}/context``: the model's view of a session and its estimated cost, as
``dsh.agent.context_report`` computes them for every face; this module only finds the session
(open here, else read-only from the store), the fold that keeps its report current (the
handle's, else the registry's for stored sessions) and the route's provider and model."""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from dsh.agent.context_report import context_report
from dsh.agent.runtime import Route
from dsh.errors import DshError
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


async def session_context(registry: SessionRegistry, session_id: str) -> dict[str, Any]:
    handle = registry.handles.get(check_session_id(session_id))
    window = registry.runtime.default_window()
    resolved = _resolved_route(registry)  # once: an unresolvable route is tried once per ask
    route = (resolved.provider.name, resolved.model) if resolved is not None else None
    # what resolving it found (no window reported, or one too small); shown by the model name
    notice = {"routeNotice": resolved.notice if resolved is not None else None}
    if handle is not None:  # being written on this loop: read it here, between appends
        report = context_report(
            handle.session, default_window=window, route=route, fold=handle.context
        )
        return {**report.public(), **notice}

    def stored() -> dict[str, Any]:
        with (
            registry.readers.held(session_id) as session,
            registry.stored_context.held(session_id) as fold,
        ):
            report = context_report(session, default_window=window, route=route, fold=fold)
        return report.public()

    try:
        return {**await anyio.to_thread.run_sync(stored), **notice}
    except DshError as exc:
        raise from_dsh_error(exc) from exc
