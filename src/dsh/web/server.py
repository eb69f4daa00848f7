"""Serving the app with uvicorn on a socket bound up front (so port 0 works and a busy port is
a clean one-line error), in the foreground (the CLI) or in a background thread (tests and the
benchmark).

In the foreground, SIGINT (Ctrl-C), SIGTERM (``kill``, a container stop) and SIGHUP (the
terminal closed) each shut the server down gracefully, as uvicorn does on the first two: no
new connections, the open ones closed, then the app's lifespan ends (``SessionRegistry.shutdown``
cancels running turns cleanly and releases the writer locks). Where uvicorn would then raise
the signal again to die of it, ``StoppingServer`` only remembers it (``stopped_by``): the CLI
still closes the MCP servers and exits with 128 + its number, which is what a shell sees of a
process a signal ended (as ``dsh run`` does, ``dsh.cli.termination``)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from dsh.agent.stop_signals import STOP_SIGNALS
from dsh.errors import UsageError


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0 picks a free one)."""
    infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    family, _, _, _, address = infos[0]
    # proto must say TCP: asyncio sets TCP_NODELAY on accepted connections only then (without
    # it, Nagle and delayed ACKs add ~40 ms to every response).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


SERVER_STOP_SIGNALS = (signal.SIGINT, *STOP_SIGNALS)
"""Signals that shut a foreground server down gracefully: Ctrl-C's and every face's
``STOP_SIGNALS`` (uvicorn's own two are SIGINT and SIGTERM; SIGHUP is the closed terminal)."""


class StoppingServer(uvicorn.Server):
    """uvicorn's server, shut down gracefully by any of ``SERVER_STOP_SIGNALS`` (see the module's
    docstring); ``stopped_by`` is the first one that came."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stopped_by: int | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # only the main thread can listen (a BackgroundServer: ``stop()``)
            return
        previous = {
            signum: signal.signal(signum, self.handle_exit) for signum in SERVER_STOP_SIGNALS
        }
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.stopped_by is None:
            self.stopped_by = sig
        super().handle_exit(sig, frame)  # a second Ctrl-C forces the exit, as in uvicorn


class WebSockets(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol (the one it picks with ``websockets`` installed), with a
    handshake refused by an HTTP response (the ASGI denial response: a live stream's 401, 403,
    404 or 400, ``dsh.web.auth``) counted as over once that response is sent: uvicorn's own
    logs ``ASGI callable returned without completing handshake.`` as an error for each one
    (its wsproto protocol does not; uvicorn PR #3138)."""

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body"):
            self.handshake_complete = True


def make_server(app: Any) -> StoppingServer:
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        ws=WebSockets,
        ws_ping_interval=20.0,
    )
    return StoppingServer(config)


class BackgroundServer:
    """The app served on ``host`` (a free port) in a daemon thread; ``stop()`` shuts it down."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        self.sock = bind_socket(host, port)
        self.host = host
        self.port: int = self.sock.getsockname()[1]
        self.server = make_server(app)
        self.thread = threading.Thread(target=self._run, name="dsh-web", daemon=True)
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def base_url(self) -> str:
        return f"http://{url_host(self.host)}:{self.port}"

    def _run(self) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.server.serve(sockets=[self.sock]))

    def start(self, timeout: float = 10.0) -> BackgroundServer:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("dsh web did not start")
            time.sleep(0.01)
        return self

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the server's loop and wait for its result."""
        assert self.loop is not None

        async def run() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=30)

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)
        self.sock.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
