"""A session's context window that its route's server gave: asked again when the session reopens.

A window the user gives (``provider.context_window``, ``--context-window``) is the session's
own: recorded with ``window_asked`` False, and every reopen keeps it, whatever the server says.
A window the route asked its server for (``dsh.llm.window``: what it reported, or the default
assumed when it said nothing) is the server's: recorded with ``window_asked`` True, and a
reopen given no window of the user's asks the server again, as a new session would
(``dsh.agent.session_settings.effective`` leaves the window unset for ``resolve_route``): a
``llama-server`` restarted with a smaller ``-c`` would otherwise be sent requests it refuses.
The budgets that were scaled to the old window scale to the new one, a window now under
``MIN_CONTEXT_WINDOW`` is refused as a new session's is, and a change is said once, in one
line (``window_change``). A server that gives no window now (silent, or not reached) leaves the
session in the one it reported before, not the default a new session assumes
(``keep_reported``). The next record logs the window used, naming it in ``changed``.

A log recorded before dsh said where its window came from (``window_asked`` None) is asked
again when its route is one that asks: a server's base URL, on a provider that does not know
its models' window.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import TYPE_CHECKING

from dsh.agent.settings_record import redact
from dsh.config import DEFAULT_CONTEXT_WINDOW, window_too_small
from dsh.events import SessionSettings
from dsh.llm.registry import KNOWN_PROVIDERS

if TYPE_CHECKING:  # only named: session_settings imports this module, and stays light
    from dsh.agent.runtime import Route

__all__ = ["asks_again", "keep_reported", "say_window_change", "window_change", "with_own_window"]

log = logging.getLogger(__name__)
_said: set[str] = set()
_said_lock = threading.Lock()


def asks_again(recorded: SessionSettings) -> bool:
    """Whether the window ``recorded`` holds is its server's, to be asked again on reopen."""
    if recorded.window_asked is not None:
        return recorded.window_asked
    known = KNOWN_PROVIDERS.get(recorded.provider)
    asks = known is not None and known.context_window is None
    return asks and recorded.base_url is not None and recorded.context_window is not None


def with_own_window(route: Route, window: int | None) -> Route:
    """``route`` in the session's own ``window`` (one its settings give, None: none), which a
    record keeps as not asked."""
    if window is None or (route.context_window, route.window_from) == (window, "settings"):
        return route
    return replace(route, context_window=window, window_from="settings")


def keep_reported(route: Route, recorded: SessionSettings | None) -> Route:
    """``route`` for a reopened session whose server, asked again, gave no window (it says
    nothing now, or cannot be reached): the window it reported before, not the default a new
    session assumes, with the route's notice saying so; still the server's (``window_from``
    "server": what it reported), so the record stays as it was."""
    from dsh.agent.runtime import ASSUMED  # here: this module is imported by the light layer

    if route.window_from != "default" or recorded is None or not asks_again(recorded):
        return route
    if recorded.window_reported is False:  # it reported none then either: nothing to keep
        return route
    window = recorded.context_window
    if window is None or window == DEFAULT_CONTEXT_WINDOW or window_too_small(window):
        return route  # what it recorded is that default (or no window at all)
    if (route.provider.name, route.model) != (recorded.provider, recorded.model):
        return route
    kept = (
        f"keeping the {window:,} tokens the session recorded from it (set "
        "provider.context_window or --context-window to choose another)"
    )
    notice = route.notice.replace(ASSUMED, kept) if route.notice is not None else None
    return replace(route, context_window=window, notice=notice, window_from="server")


def window_change(session_id: str, recorded: SessionSettings | None, route: Route) -> str | None:
    """The line that says the server reopening ``session_id`` on ``route`` reports another
    window than the session recorded from it (None: nothing to say — the same window, one the
    user gave, a server that said nothing, which the route's notice says, or another route:
    provider, model or server, whose move the flags' warning says with the window)."""
    if recorded is None or recorded.context_window is None or not asks_again(recorded):
        return None
    if route.window_from != "server" or route.context_window == recorded.context_window:
        return None
    moved = (route.provider.name, route.model, redact(route.base_url)) != (
        recorded.provider,
        recorded.model,
        redact(recorded.base_url),
    )
    if moved:
        return None  # a flag moved the route: the flags' own warning says so
    now, before = route.context_window or 0, recorded.context_window
    return (
        f"session {session_id}: its server now reports a {now:,}-token context window for "
        f"{route.model} (the session recorded {before:,}); it runs and compacts in {now:,} "
        "(set --context-window or provider.context_window to choose another)"
    )


def say_window_change(session_id: str, recorded: SessionSettings | None, route: Route) -> None:
    """Log ``window_change``'s line as a warning, once per process (a face resolves a
    session's route more than once while it opens it)."""
    line = window_change(session_id, recorded, route)
    if line is None:
        return
    with _said_lock:
        if line in _said:
            return
        _said.add(line)
    log.warning("%s", line)
