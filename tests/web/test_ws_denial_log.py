"""A live stream refused before its handshake (no token, a wrong one, an unknown session, a bad
``after_seq``) is answered with its typed HTTP error, and the server logs no error for it
(uvicorn's websockets protocol took a denial response for a handshake never completed:
``ASGI callable returned without completing handshake.``, on every refused page)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from dsh.web import BackgroundServer
from tests.web.conftest import AUTH, make_env


class Returned:
    """The app, noting each WebSocket call it returned from: the note is made by the loop once
    the step that returned is over, after the server handled the return (and logged it)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.count = 0
        self.changed = threading.Condition()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await self.app(scope, receive, send)
        finally:
            if scope["type"] == "websocket":
                asyncio.get_running_loop().call_soon(self._note)

    def _note(self) -> None:
        with self.changed:
            self.count += 1
            self.changed.notify_all()

    def wait(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.count >= count, timeout=30)


@contextlib.contextmanager
def uvicorn_errors() -> Iterator[list[logging.LogRecord]]:
    """The errors uvicorn logs meanwhile (from after its config set its loggers up)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)


def test_a_refused_live_stream_is_a_typed_http_error_and_logs_nothing(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    app = Returned(env.app())
    server = BackgroundServer(app)
    with uvicorn_errors() as errors:
        server.start()
        check_refusals(server, app)
    assert [record.getMessage() for record in errors] == []


def check_refusals(server: BackgroundServer, app: Returned) -> None:
    base = f"ws://127.0.0.1:{server.port}"
    unknown = "/api/sessions/20990101-000000-000-abcdef/live"
    refused = [
        ("/api/live", {}, ["dsh"], 401),  # a page opened without the token
        ("/api/live", {}, ["dsh", "dsh.token.wrong"], 401),
        (unknown, AUTH, ["dsh"], 404),
        (unknown + "?after_seq=x", AUTH, ["dsh"], 400),
    ]
    try:
        for n, (path, headers, protocols, status) in enumerate(refused, start=1):
            with pytest.raises(InvalidStatus) as denied:
                connect(
                    base + path, proxy=None, open_timeout=10, additional_headers=headers,
                    subprotocols=protocols,  # type: ignore[arg-type]
                )  # fmt: skip
            assert denied.value.response.status_code == status
            app.wait(n)
    finally:
        server.stop()
