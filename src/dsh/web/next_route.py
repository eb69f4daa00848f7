"""The route a session's next turn here runs on, shown before that turn logs it.

A session opened here runs its next turn on ``Runtime.own``'s route: the one ``/model NAME``
chose for it, else its recorded settings with this server's flags over them (``--context-window``
or a moved model win), a recorded window its server reported asked again (the config's window,
else the server's answer now), a recorded one no longer valid replaced by the configured one
(``dsh.agent.session_settings.effective``, ``dsh.agent.asked_window``). Until that turn logs it
(its ``session/settings``), the log names the window the session ran in before; the page's
figures (the header's context use, the context panel) and ``/model`` show the next turn's.

Resolving it may ask a server (a session on another model than the server's resolves its own
route, which may ask its endpoint its window, ``dsh.llm.window``), so it is resolved in a worker
thread, the session read first where it may be read (on the loop for a session open here, in the
thread that holds a stored one); and once per session and record: ``NextRoutes`` keeps it with
the seq of the session's latest ``session/settings`` event (its *mark*), so the figures each
reply refreshes take it on the loop with no work (``kept``). A route that cannot be resolved (a
missing key) is kept as such: the figures fall back to the window the log names, else the
server's (``dsh.web.figures``), and only ``/model``, a turn or a ``/compact`` tries it again (and
says why it cannot). A turn that logs new settings moves the mark: the window it logged is then
the one it ran in.

The kept route is also the one a turn or a ``/compact`` runs on: the registry has it resolved
before it starts one (``ready_handle``), and the runtime makes the session's agent, its engine
and its settings record with it (``WebRuntime._own``), so no route is resolved on the loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio.to_thread

from dsh.agent.runtime import Route
from dsh.errors import DshError
from dsh.events import SessionSettingsEvent
from dsh.surface import Session

if TYPE_CHECKING:  # the runtime keeps its ``NextRoutes``: only named here
    from dsh.web.handle import Handle
    from dsh.web.runtime import Runtime
    from dsh.web.sessions import SessionRegistry

Planned = Route | Callable[[], Route] | None
"""A session's next route when known (None: known not to resolve), else what resolves it."""


def settings_mark(session: Session) -> int:
    """The seq of the session's latest ``session/settings`` event (-1: none): a next route is
    kept for one mark."""
    recorded = session.of_type(SessionSettingsEvent)
    return recorded[-1].seq if recorded else -1


class NextRoutes:
    """The next routes resolved so far, by session id, each with its mark (thread-safe: a
    stored session is planned in the worker thread that holds it). The runtime keeps them: what
    makes a session's agent and engine on the loop takes its route from here (``ready_handle``)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._kept: dict[str, tuple[int, Route | None]] = {}
        self._guard = threading.Lock()

    def kept(self, session: Session) -> Route | None:
        """The session's next route if it is known for its latest record (``/model``'s choice
        always is); None otherwise. No work: for the loop."""
        chosen = self.runtime.chosen_route(session.id)
        if chosen is not None:
            return chosen
        with self._guard:
            found = self._kept.get(session.id)
        return found[1] if found is not None and found[0] == settings_mark(session) else None

    def plan(self, session: Session, *, again: bool = False, fresh: bool = False) -> Planned:
        """The session's next route when it is known for its latest record (None: it did not
        resolve; with ``again``, a failure is tried again; with ``fresh``, any kept route is),
        else what resolves it: the session read now, the route resolved when it is called (in a
        worker thread), kept as it comes out (a ``DshError`` it raises kept as None)."""
        chosen = self.runtime.chosen_route(session.id)
        if chosen is not None:
            return chosen
        mark, session_id = settings_mark(session), session.id
        with self._guard:
            found = self._kept.get(session_id)
        kept = None if found is None or found[0] != mark or fresh else found
        if kept is not None and (kept[1] is not None or not again):
            return kept[1]
        own = self.runtime.own_later(session)

        def resolve() -> Route:
            try:
                route = own()
            except DshError:
                self._keep(session_id, mark, None)
                raise
            self._keep(session_id, mark, route)
            return route

        return resolve

    def _keep(self, session_id: str, mark: int, route: Route | None) -> None:
        with self._guard:
            self._kept[session_id] = (mark, route)


async def next_route(registry: SessionRegistry, session_id: str) -> Route | None:
    """The route the session's next turn here runs on, resolved off the loop once per record
    and kept (``NextRoutes``); None when it cannot be resolved. 404 for an unknown session."""
    return await settled(await _planned(registry, session_id, again=False))


async def settled(planned: Planned) -> Route | None:
    """``planned`` as a route, resolved in a worker thread when it must be (None: it cannot
    be)."""
    if not callable(planned):
        return planned
    try:
        return await anyio.to_thread.run_sync(planned)
    except DshError:
        return None


async def ready_handle(registry: SessionRegistry, session_id: str, *, fresh: bool) -> Handle:
    """The handle of the open session, idle, once the route its next turn or ``/compact`` runs
    on is kept for its latest record: resolved in a worker thread when it is not, or when
    ``fresh`` (what starts asks afresh, as each agent did: a server not reached before may
    answer now), so what makes its agent and engine on the loop (``WebRuntime._own``) resolves
    nothing there. Raises what resolving raises (``DshError``: a missing key); 409 for a
    session closed, or busy, meanwhile."""
    while True:
        handle = registry.open_handle(session_id)
        registry.ensure_idle(handle)
        planned = registry.next_routes.plan(handle.session, again=True, fresh=fresh)
        if not callable(planned):
            return handle
        await anyio.to_thread.run_sync(planned)  # kept: found on the next round
        fresh = False


async def resolved_next_route(registry: SessionRegistry, session_id: str) -> Route:
    """``next_route``, tried again when it did not resolve before: raises its ``DshError``."""
    planned = await _planned(registry, session_id, again=True)
    if callable(planned):
        return await anyio.to_thread.run_sync(planned)
    assert planned is not None, "a failure is planned again"
    return planned


async def _planned(registry: SessionRegistry, session_id: str, *, again: bool) -> Planned:
    routes = registry.next_routes
    handle = registry.handles.get(session_id)
    if handle is not None:  # read on the loop, where it is appended to
        return routes.plan(handle.session, again=again)
    return await registry.stored(session_id, lambda session: routes.plan(session, again=again))
