"""The notice the pages show while ``dsh web`` waits for a route's server to load its model.

A route resolved here (the server's at start, or a new session's first prompt when it did not
resolve then; a session reopened on its recorded route, which its page's info waits for;
``/model NAME``) may ask an OpenAI-compatible server its window or its models, and llama-server
answers 503 "Loading model" until its model is loaded: ``dsh.llm.window`` waits for it
(``NOT_READY_WAIT``) and tells its ``waiting`` callback once. ``dsh run`` prints that line; here
``RouteWaits.around`` hands the resolution a callback that sends it to the pages, over the
server's stream (``WS /api/live``, open for a page's life: a session's own stream may be waiting
for that very route to say hello), as::

    {"kind": "route-wait", "session": ID | null, "text": "http://…/v1: the server answered 503 …"}

and, once the resolution is over (resolved or refused), the same with ``"text": null``.
``session``: the session the request (or the work it started) serves, as
``dsh.web.warning_feed`` finds it (``WARNING_SESSION``), null for the server's own; a page shows
its shown session's wait, else the server's. The stream's ``hello`` carries the waits going on
as ``routeWaits`` (``[{session, text}]``). The line also goes to ``echo`` (``dsh web``: stderr,
as ``dsh run`` prints it), not to the warnings, which stay once the server has loaded: the
page's notice goes when the wait does.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator

from dsh.web.live import LiveHub, frame
from dsh.web.warning_feed import WARNING_SESSION

Waiting = Callable[[str], None]


class RouteWaits:
    """The waits for a loading server going on, by session (None: the server's own), each
    sent to the pages as it starts and ends (thread-safe: a route is resolved in a worker
    thread)."""

    def __init__(self, echo: Waiting | None = None) -> None:
        self._echo = echo
        self._server: LiveHub | None = None
        self._waits: dict[str | None, dict[int, str]] = {}
        self._ids = itertools.count()
        self._guard = threading.Lock()

    def deliver_to(self, server: LiveHub) -> None:
        """The server's stream (the registry's), which every page listens to."""
        self._server = server

    def going_on(self) -> list[dict[str, str | None]]:
        """The waits going on, ``{session, text}`` each (the latest of a session's)."""
        with self._guard:
            return [
                {"session": session, "text": next(reversed(waits.values()))}
                for session, waits in self._waits.items()
                if waits
            ]

    @contextlib.contextmanager
    def around(self) -> Iterator[Waiting]:
        """A ``waiting`` callback for one route resolution, for the session the running code
        serves; what it was told is taken back from the pages when the block ends."""
        session, key = WARNING_SESSION.get(), next(self._ids)
        told = False

        def waiting(line: str) -> None:
            nonlocal told
            with self._guard:
                self._waits.setdefault(session, {})[key] = line
                told = True
            if self._echo is not None:
                self._echo(line)
            self._send(session)

        try:
            yield waiting
        finally:
            if told:
                with self._guard:
                    waits = self._waits.get(session, {})
                    waits.pop(key, None)
                    if not waits:
                        self._waits.pop(session, None)
                self._send(session)

    def _send(self, session: str | None) -> None:
        """The pages get the session's wait as it is now (sent under the guard: in order)."""
        hub = self._server
        if hub is None:
            return
        with self._guard:
            waits = self._waits.get(session)
            text = next(reversed(waits.values())) if waits else None
            with contextlib.suppress(RuntimeError):  # the server's loop has closed
                hub.publish(frame("route-wait", session=session, text=text))
