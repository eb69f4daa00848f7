"""``/model`` in ``dsh web``: the model a session's next turns run on, shown and changed from its
page, as the terminal UI's ``/model`` does.

A session runs on the model it recorded (else the server's: its flags and the config).
``/model NAME`` in its composer resolves NAME on the session's provider as the terminal UI
resolves it (a missing key, a window too small: refused in one line, nothing changed; in the
window the session set, which stays, else the new model's: ``dsh.agent.model_command``), and from
then on the session's next turns and ``/compact`` run on it: not a running turn, which keeps its
model; not the other sessions (each page changes its own); for the rest of this server's run,
the session closed and resumed here included. Nothing is logged at once: the next turn (or
``/compact``) logs the route it runs on as every face logs a route change, a ``session/settings``
event naming ``provider.model`` among its changed keys, and the new route's ``request/context``;
so the session's next opening, by this server started again or by any face, runs it on NAME
too (its recorded model), as after the terminal UI's ``/model``. The words are the terminal UI's
(``dsh.agent.model_command``)."""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from dsh.agent.model_choice import checked_choice, listing_note, public_list
from dsh.agent.model_command import model_name
from dsh.agent.runtime import Route
from dsh.agent.wiring import session_window
from dsh.errors import DshError, UsageError
from dsh.llm.model_list import list_models
from dsh.web.errors import bad_request, from_dsh_error
from dsh.web.live import frame
from dsh.web.next_route import resolved_next_route
from dsh.web.sessions import SessionRegistry


def _public(route: Route) -> dict[str, Any]:
    return {
        "provider": route.provider.name,
        "model": route.model,
        "window": session_window(route),
    }


async def shown_model(registry: SessionRegistry, session_id: str) -> dict[str, Any]:
    """``/model``: ``{provider, model, window, note, models, unavailable}`` of the route the
    open session's next turn runs on (``Runtime.own``: the one ``/model`` chose, else its
    recorded one, else the server's), ``note`` the terminal UI's line with the models the
    server lists (``dsh.agent.model_choice``: ``models`` null and ``unavailable`` why, when it
    lists none). Resolving it may ask a server (a session on another model than the server's):
    in a worker thread (``dsh.web.next_route``), never on the loop; once resolved, it is kept
    until the session records new settings. The list is asked anew, bounded
    (``dsh.llm.model_list``)."""
    route = await _next_route(registry, session_id)
    listed = await list_models(route.provider)
    registry.open_handle(session_id)  # closed meanwhile?
    shown = _public(route)
    note = listing_note(route.model, shown["provider"], shown["window"], listed)
    return {**shown, "note": note, **public_list(listed)}


async def _next_route(registry: SessionRegistry, session_id: str) -> Route:
    try:
        return await resolved_next_route(registry, session_id)
    except DshError as exc:
        raise from_dsh_error(exc) from exc


def checked_name(name: str) -> str:
    """A model name as ``/model NAME`` takes it, in the terminal UI too
    (``dsh.agent.model_command.model_name``: spaces inside it kept); 400 otherwise."""
    try:
        checked = model_name(name)
    except UsageError as exc:
        raise bad_request(str(exc)) from exc
    if checked is None:
        raise bad_request("/model NAME takes a model name")
    return checked


async def choose_model(registry: SessionRegistry, session_id: str, name: str) -> dict[str, Any]:
    """``/model NAME`` on an open session: ``{provider, model, window, note}`` of the route its
    next turns run on from now; its pages hear ``stats`` (the window its context use is
    measured against may have changed) and fetch its context again. A NAME the server of the
    session's current route does not list is refused (400, naming the closest listed); when
    the list cannot be had, NAME is taken and ``note`` starts with the warning line."""
    name = checked_name(name)
    current = await _next_route(registry, session_id)
    try:  # a name the server does not list is refused; without a list, taken with a warning
        warning = checked_choice(name, current.provider.name, await list_models(current.provider))
    except UsageError as exc:
        raise bad_request(str(exc)) from exc
    session = registry.open_handle(session_id).session
    resolve = registry.runtime.model_route(session, name, current.context_window)
    try:
        route, note = await anyio.to_thread.run_sync(resolve)
    except DshError as exc:
        raise from_dsh_error(exc) from exc
    handle = registry.open_handle(session_id)  # closed while it resolved?
    registry.runtime.choose_route(session_id, route)
    handle.runner.reset_agent()  # the next turn gets an agent on it; a running one keeps its own
    handle.hub.publish(frame("stats", stats=registry.stats(handle)))
    return {**_public(route), "note": note if warning is None else f"{warning}\n{note}"}
