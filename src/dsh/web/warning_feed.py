"""dsh's warnings while ``dsh web`` serves: sent to the pages, not only to the server's stderr.

Every ``dsh.*`` warning or error logged while the server runs is kept, identical ones (same
session, level and text) coalesced into one entry with a count and the times of the first and
the last (at most ``MAX_KEPT`` entries; the oldest go first), and sent as a frame::

    {"kind": "warning", "warning": {id, session, level, text, count, first, last, shownAsError}}

to the pages it concerns. Its ``text`` is the record's message as ``dsh.errors.error_line``
makes it (one line, a character that does not print as its escape, at most
``dsh.errors.WARNING_LINE_CHARS`` characters, as the stderr printer and the terminal UI show a
warning): of a warning that quotes a huge text, no more is kept or sent. A repeat is the same
``id`` with a higher ``count``; a warning repeating fast is not sent once per repeat: at most
one update per warning every ``UPDATE_EVERY`` seconds reaches the pages (the first at once,
repeats within the interval counted into one update at its end, so the last count always
arrives). ``shownAsError``: the page already shows it as an error of its own (a turn's or
``/compact``'s internal error, as the ``error`` frame: its record carries
``dsh.errors.SHOWN_AS_ERROR``), so it lists it with no toast of the warnings'; its text names
the error (``dsh.errors.error_line``: one line, bounded).

- One raised while serving a session is that session's (``session`` is its id): a request
  under ``/api/sessions/{id}``, or work such a request started (a turn, a ``/compact``, the
  start of its MCP servers, the follower of its log). It goes to the pages watching that
  session, over its live stream; a page that connects later gets it in the stream's ``hello``.
- Any other (raised while the server started, or by a thread of its own) is the server's
  (``session`` is null). It goes to every open page, over the server's stream (``WS
  /api/live``), whose ``hello`` carries those kept.

A session's load warnings (a torn last line dropped, a turn a crashed process left open
closed, the SQLite check after an unclean stop) are logged as that session's once per load
(``warn_for_session``): when the page resumes it here, and when the read cache loads it whole
(not when it catches up with what was appended), so its pages list what the CLI prints.

A record knows its session through a context variable (``WARNING_SESSION``) that
``SessionScope`` sets around a session's requests: asyncio tasks, ``anyio`` worker threads and
calls into the MCP thread (``run_coroutine_threadsafe``) carry it along. The stderr printer
still prints every line (the server's own log). Nothing is written into a session's log: a
warning is not a conversation event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from dsh.errors import WARNING_LINE_CHARS, error_line, shown_as_error
from dsh.web.live import LiveHub, frame

DSH_LOGGER = "dsh"
MAX_KEPT = 200
"""Distinct warnings the server keeps (the session's and the server's together)."""
UPDATE_EVERY = 0.25
"""Seconds: a warning's updates reach the pages at most this often (the first at once)."""

Clock = Callable[[], float]
"""Monotonic seconds (``time.monotonic``; tests inject their own)."""
Later = Callable[[float, Callable[[], None]], None]
"""Calls the callback after the delay (seconds), from the thread that delivers updates (never
before it returns)."""

WARNING_SESSION: ContextVar[str | None] = ContextVar("dsh_web_warning_session", default=None)
"""The session the running code serves (None: the server's own work)."""

_SESSION_PATH = re.compile(r"^/api/sessions/([^/]+)")
_store_log = logging.getLogger("dsh.store")


def warn_for_session(session_id: str, warnings: Iterable[str]) -> None:
    """Log each of ``warnings`` as session ``session_id``'s (what its load warned of: a torn
    last line dropped, a turn a crashed process left open closed…): the feed sends them to that
    session's pages, and the server's stderr prints them as the CLI prints a load's."""
    token = WARNING_SESSION.set(session_id)
    try:
        for warning in warnings:
            _store_log.warning("%s", warning)
    finally:
        WARNING_SESSION.reset(token)


class SessionScope:
    """ASGI middleware: a request under ``/api/sessions/{id}`` (and all it starts) runs with
    ``WARNING_SESSION`` set to that id."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = None
        if scope["type"] in ("http", "websocket"):
            found = _SESSION_PATH.match(scope.get("path", ""))
        if found is None:
            await self.app(scope, receive, send)
            return
        token = WARNING_SESSION.set(found[1])
        try:
            await self.app(scope, receive, send)
        finally:
            WARNING_SESSION.reset(token)


@dataclass(slots=True)
class KeptWarning:
    """One distinct warning of this server run and how often it came."""

    id: str
    session: str | None
    level: str
    """``warning``, ``error`` or ``critical``."""
    text: str
    first: float
    last: float
    count: int = 1
    shown_as_error: bool = False
    """The latest of them is of a failure the page shows as an error of its own."""
    sent_at: float | None = None
    """When (the feed's clock) the pages were last sent it; None: never yet."""
    waiting: bool = False
    """An update is due at ``sent_at + UPDATE_EVERY``: it carries the repeats counted since."""

    def public(self) -> dict[str, Any]:
        """The frame's ``warning`` (times in epoch milliseconds)."""
        return {
            "id": self.id,
            "session": self.session,
            "level": self.level,
            "text": self.text,
            "count": self.count,
            "first": round(self.first * 1000),
            "last": round(self.last * 1000),
            "shownAsError": self.shown_as_error,
        }


class WarningFeed(logging.Handler):
    """Keeps the server's warnings and sends each to the pages it concerns, paced (see the
    module's docstring). Records come from any thread; none waits for a page.

    ``clock`` and ``later`` pace the updates: by default the monotonic clock and the server's
    loop (``bind_loop``); before a loop is bound, no page can listen and nothing is paced."""

    def __init__(
        self,
        *,
        clock: Clock = time.monotonic,
        later: Later | None = None,
        every: float = UPDATE_EVERY,
    ) -> None:
        super().__init__(logging.WARNING)
        self.server = LiveHub("(server)")
        """The server's stream: its warnings, to every open page."""
        self._sessions: Mapping[str, LiveHub] = {}
        self._kept: dict[tuple[str | None, str, str], KeptWarning] = {}
        self._made = 0
        self._guard = threading.Lock()
        self._delivering = threading.local()
        self._installs = 0
        self._clock = clock
        self._later = later
        self._every = every
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind_loop(self) -> None:
        """On the server's loop: the server's stream hands pushes from other threads to it, and
        the paced updates are sent from it."""
        self.server.bind_loop()
        self._loop = asyncio.get_running_loop()

    def deliver_to(self, hubs: Mapping[str, LiveHub]) -> None:
        """The sessions' live streams, by session id (the registry's, as it makes them)."""
        self._sessions = hubs

    @contextlib.contextmanager
    def installed(self) -> Iterator[WarningFeed]:
        """dsh's records come here too while inside (nested uses install it once)."""
        logger = logging.getLogger(DSH_LOGGER)
        self._installs += 1
        logger.addHandler(self)
        try:
            yield self
        finally:
            self._installs -= 1
            if self._installs == 0:
                logger.removeHandler(self)

    def kept(self, session: str | None) -> list[dict[str, Any]]:
        """The kept warnings of ``session`` (None: the server's), oldest first."""
        with self._guard:
            return [w.public() for w in self._kept.values() if w.session == session]

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._delivering, "active", False):
            return  # raised while this thread delivered a warning: never a loop
        try:
            # one line, escaped and bounded, as the stderr printer and the terminal UI show it
            text = error_line(record.getMessage(), WARNING_LINE_CHARS)
        except Exception:
            self.handleError(record)
            return
        session = WARNING_SESSION.get()
        self._delivering.active = True
        try:
            with self._guard:
                warning = self._keep(session, record.levelname.lower(), text, record.created)
                warning.shown_as_error = shown_as_error(record)
                self._update(warning)
        finally:
            self._delivering.active = False

    def _update(self, warning: KeptWarning) -> None:
        """Send ``warning`` now, or once its interval since the last send is over (then with
        every repeat counted until that moment). Under the guard."""
        if warning.waiting:
            return  # the update already due carries this repeat
        now = self._clock()
        wait = 0.0 if warning.sent_at is None else warning.sent_at + self._every - now
        if wait > 0 and self._call_later(wait, lambda: self._send_due(warning)):
            warning.waiting = True
        else:
            self._send(warning, now)

    def _send_due(self, warning: KeptWarning) -> None:
        self._delivering.active = True
        try:
            with self._guard:
                if warning.waiting:
                    warning.waiting = False
                    self._send(warning, self._clock())
        finally:
            self._delivering.active = False

    def _send(self, warning: KeptWarning, now: float) -> None:
        warning.sent_at = now
        hub = self.server if warning.session is None else self._sessions.get(warning.session)
        if hub is not None:
            with contextlib.suppress(RuntimeError):  # the server's loop has closed
                hub.publish(frame("warning", warning=warning.public()))

    def _call_later(self, delay: float, callback: Callable[[], None]) -> bool:
        """Schedule ``callback``; False if nothing can (no loop yet, or it has closed)."""
        if self._later is not None:
            self._later(delay, callback)
            return True
        loop = self._loop
        if loop is None:
            return False
        try:
            loop.call_soon_threadsafe(loop.call_later, delay, callback)
        except RuntimeError:  # the loop has closed: the server stopped
            return False
        return True

    def _keep(self, session: str | None, level: str, text: str, at: float) -> KeptWarning:
        key = (session, level, text)
        warning = self._kept.get(key)
        if warning is not None:
            warning.count += 1
            warning.last = at
            return warning
        if len(self._kept) >= MAX_KEPT:
            del self._kept[next(iter(self._kept))]
        self._made += 1
        warning = self._kept[key] = KeptWarning(f"w{self._made}", session, level, text, at, at)
        return warning
