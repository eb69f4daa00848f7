"""Resolving a route in the terminal UI while its server may still be loading its model.

A route from the settings may ask its server which model it serves and how large its window
is; llama-server answers 503 ("Loading model") while it loads a GGUF, and ``dsh.llm.window``
waits for it, up to ``NOT_READY_WAIT`` seconds. So the app resolves such a route in a thread
of its own (at start, on ``/model NAME``, when ``/resume``, ``/sessions`` or ``/new`` opens a
session), the screen and the keys live meanwhile, and shows one note while the server loads:
the line ``dsh run`` prints on stderr (the server, what it answered, how long dsh waits). When
the route is resolved the note says so (``ready after N s``; ``still not ready after N s`` when
dsh gave up, the error that says why after it). While a session opens this way the composer
queues what is sent, as it does while a long session opens (``dsh.tui.opening``). The thread is
a daemon: quitting during the wait leaves at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from dsh.errors import DshError, error_line

if TYPE_CHECKING:
    from dsh.tui.app import DshApp
    from dsh.tui.blocks import Block

_T = TypeVar("_T")


def finished(line: str, seconds: float, *, ready: bool) -> str:
    """The wait's note once it is over: ``line`` (``dsh.llm.window``'s) with its outcome."""
    head = line.partition("; waiting")[0]
    outcome = "ready" if ready else "still not ready"
    return f"{head}; {outcome} after {int(seconds)} s."


class ServerWait:
    """The one note of a route's server loading its model, shown from whichever thread the
    route is resolved in."""

    def __init__(self, app: DshApp) -> None:
        self.app = app
        self.note: Block | None = None
        self.line = ""
        self._since = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0

    def attach(self) -> None:
        """Be told of waits (on the app's loop, once it runs)."""
        self._loop, self._thread = asyncio.get_running_loop(), threading.get_ident()
        self.app.controller.on_server_wait = self.told

    def told(self, line: str) -> None:
        """A wait starts (``dsh.llm.window``'s ``waiting``): said on the app's loop."""
        if threading.get_ident() == self._thread or self._loop is None:
            self._show(line)
        else:
            self._loop.call_soon_threadsafe(self._show, line)

    def _show(self, line: str) -> None:
        if self.note is None:  # one note per wait, however many questions wait
            self.line, self._since = line, time.monotonic()
            self.note = self.app.transcript.add_note(line)

    def finish(self, *, ready: bool) -> None:
        """The route is resolved (``ready``) or refused: the note says so (again at the end,
        if the transcript was loaded again meanwhile)."""
        note, self.note = self.note, None
        if note is None:
            return
        text = finished(self.line, time.monotonic() - self._since, ready=ready)
        if not self.app.transcript.set_note(note, text):
            self.app.note(text)


async def off_the_loop(app: DshApp, work: Callable[[], _T]) -> _T:
    """``work()`` (which resolves a route) in a thread; the wait's note finished when it
    fails (before the error is said), else by the caller once what it opened shows."""
    try:
        return await in_daemon_thread(work)
    except DshError:
        app.server_wait.finish(ready=False)
        raise


async def in_daemon_thread(work: Callable[[], _T]) -> _T:
    """``work()`` in a thread of its own that does not keep the process alive: quitting
    while a server loads its model leaves at once, not after the wait (``asyncio.to_thread``'s
    threads are joined at exit)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[_T] = loop.create_future()

    def run() -> None:
        try:
            result = work()
        except BaseException as exc:  # handed to the awaiting task
            failure = exc
            deliver(lambda: done.set_exception(failure))
        else:
            deliver(lambda: done.set_result(result))

    def deliver(outcome: Callable[[], None]) -> None:
        def settle() -> None:
            if not done.done():  # the awaiting task may have been cancelled
                outcome()

        with contextlib.suppress(RuntimeError):  # the loop closed: nobody awaits it
            loop.call_soon_threadsafe(settle)

    threading.Thread(target=run, name="dsh-route", daemon=True).start()
    return await done


def switch_model(app: DshApp, name: str) -> None:
    """``/model NAME``'s route resolved off the loop, then used (a later ``/model`` wins)."""

    async def switch() -> None:
        try:
            route, said = await off_the_loop(app, lambda: app.controller.model_route(name))
        except DshError as exc:
            app.note(f"error: {error_line(str(exc))}")
            return
        app.controller.use_route(route)
        app.server_wait.finish(ready=True)
        app.note(said)
        app.update_status()

    app.run_worker(switch(), group="model-route", exclusive=True)


def open_session(app: DshApp, session_id: str, said: str) -> None:
    """``/resume ID`` (and ``/sessions``' choice): opened in a thread, what is sent meanwhile
    queued until it is open."""

    async def opened() -> None:
        app.ready = False
        try:
            items = await off_the_loop(app, lambda: app.controller.open(session_id))
        except DshError as exc:
            app.note(f"error: {error_line(str(exc))}")
        else:
            app.switched(items, said)
            app.server_wait.finish(ready=True)
        finally:
            app.ready = True
            app.work.send_queued()

    app.run_worker(opened(), group="open")


def new_session(app: DshApp, done: Callable[[str | None], None]) -> None:
    """``/new``: the configured route resolved in a thread, then the session left (``done``
    told of the id left)."""

    async def fresh() -> None:
        app.ready = False
        try:
            route = await off_the_loop(app, lambda: app.controller.route_of(None))
            done(app.controller.new_session(route))
            app.server_wait.finish(ready=True)
        except DshError as exc:
            app.note(f"error: {error_line(str(exc))}")
        finally:
            app.ready = True
            app.work.send_queued()

    app.run_worker(fresh(), group="open")
