"""An open page whose ``dsh web`` stopped sends its token to no one else who takes the port
(``dsh.web.hello``, ``static/hello.js``), in Debian's chromium against a real server.

Once the server stops, its port is anyone's: another local user can listen there. The page's
reconnections (the session's live stream, ``connection.js``; the server's, ``warnings.js``)
ask the server at the address to prove it knows the token (``GET /api/hello?nonce=``, an HMAC)
before they send it; a listener that cannot is never sent the token, and the page says it is
not the dsh web that opened it. The same server back on the port with the same token proves it,
and the page reconnects by itself, its first request the proof asked without the token."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from starlette.types import Receive, Scope, Send

from dsh.surface import Session
from dsh.web import BackgroundServer
from dsh.web.auth import request_token
from tests.helpers import append_chat_turn
from tests.web.conftest import TOKEN, WebEnv, make_env
from tests.web.pages import first_page_loaded

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

NOT_DSH_BAR = (
    "Disconnected: the server at this address is not the dsh web that opened this page. "
    "Reload from the URL `dsh web` printed."
)
BOTH_UP = (
    "() => window.dsh.socket?.readyState === 1 && window.dsh.warnings.socket?.readyState === 1"
)


class Listener:
    """A plain HTTP listener on a port: it records every request's line and headers as they
    came, and answers each with ``body`` (a well-formed proof that is wrong, or a page)."""

    def __init__(self, port: int, status: int, body: bytes, content_type: str) -> None:
        self.requests: list[str] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                listener.requests.append(f"{self.requestline}\r\n{self.headers}")
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)  # reuses the address
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Recorded:
    """The app, recording each request's type, path and whether it carried a token."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, str, bool]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            self.seen.append((scope["type"], scope["path"], request_token(scope) is not None))
        await self.app(scope, receive, send)


@pytest.fixture
def stored(tmp_path: Path) -> tuple[WebEnv, str]:
    env = make_env(tmp_path)
    with Session.create(env.store, cwd=env.workspace) as session:
        append_chat_turn(session, "a question", "an answer")
        return env, session.id


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()  # a failed reconnection logs a console error: expected
    try:
        yield context.new_page()
    finally:
        context.close()


def shown(page: Any, base_url: str, sid: str) -> None:
    page.goto(f"{base_url}/?token={TOKEN}#s={sid}")
    first_page_loaded(page)
    page.wait_for_function(BOTH_UP)


@pytest.mark.parametrize(
    ("status", "body", "content_type"),
    [
        (200, b'{"proof": "' + b"0" * 64 + b'"}', "application/json"),
        (404, b"<html>nothing here</html>", "text/html"),
    ],
    ids=["a-wrong-proof", "a-page"],
)
def test_a_listener_on_the_freed_port_is_never_sent_the_token(
    stored: tuple[WebEnv, str], page: Any, status: int, body: bytes, content_type: str
) -> None:
    env, sid = stored
    server = BackgroundServer(env.app()).start()
    port = server.port
    listener = None
    try:
        shown(page, server.base_url, sid)
        server.stop()
        listener = Listener(port, status, body, content_type)
        # both streams asked the listener for the proof, got none, and gave up
        page.wait_for_function(
            "(bar) => document.getElementById('connection').textContent === bar", arg=NOT_DSH_BAR
        )
        page.wait_for_function("() => window.dsh.warnings.refused")
        page.wait_for_function(
            "() => document.getElementById('toast').textContent"
            ".includes('is not the dsh web that opened this page')"
        )
        assert page.evaluate("() => window.dsh.socket") is None
        assert page.evaluate("() => window.dsh.warnings.socket") is None
        assert page.evaluate("() => document.body.dataset.connection") == "lost"
        assert page.is_disabled("#send")
        heard = list(listener.requests)
        assert heard, "the listener was never asked"
        assert all(r.startswith("GET /api/hello?nonce=") for r in heard), heard
        for request in heard:
            assert TOKEN not in request
            assert "authorization" not in request.lower()
            assert "dsh.token." not in request.lower()
        # whatever the page asks now is refused before it is sent: nothing carries the token
        asked = page.evaluate(
            """async () => {
              const { api } = await import('/s/api.js');
              try { await api('GET', '/api/sessions'); return 'sent'; } catch (e) { return e.code; }
            }"""
        )
        assert asked == "NOT_DSH"
        assert all(TOKEN not in r and "authorization" not in r.lower() for r in listener.requests)
    finally:
        if listener is not None:
            listener.close()
        server.stop()


def test_the_same_dsh_web_back_on_the_port_proves_it_and_the_page_reconnects(
    stored: tuple[WebEnv, str], page: Any
) -> None:
    """Stopped, then started again with the same token on the same port (a persistent
    ``DSH_WEB_TOKEN``): the page's first request to it is the proof, asked without the token;
    the streams come back by themselves once it verifies."""
    env, sid = stored
    first = BackgroundServer(env.app()).start()
    second = None
    try:
        shown(page, first.base_url, sid)
        first.stop()
        page.wait_for_selector("#connection", state="visible")
        recorded = Recorded(env.app())
        second = BackgroundServer(recorded, port=first.port).start()
        page.wait_for_selector("#connection", state="hidden")
        page.wait_for_function(BOTH_UP)
        assert page.evaluate("() => document.body.dataset.connection") == "up"
        seen = list(recorded.seen)
        assert seen[0] == ("http", "/api/hello", False), seen
        first_token = next(i for i, (_, _, token) in enumerate(seen) if token)
        assert all(path == "/api/hello" for _, path, _ in seen[:first_token]), seen
        assert ("websocket", f"/api/sessions/{sid}/live", True) in seen
        assert ("websocket", "/api/live", True) in seen
        # one proof for the page, not one per stream
        assert sum(path == "/api/hello" for _, path, _ in recorded.seen) == 1
    finally:
        if second is not None:
            second.stop()
        first.stop()


def test_a_page_without_webcrypto_sends_the_token_again_to_no_one(
    stored: tuple[WebEnv, str], browser: Any
) -> None:
    """A plain-http page from another machine (a non-loopback bind) is no secure context: it
    has no ``crypto.subtle`` to check a proof with, so after a disconnect it sends the token to
    no one and says to reload (here WebCrypto is taken away from a loopback page)."""
    env, sid = stored
    context = browser.new_context()
    context.add_init_script(
        "Object.defineProperty(Crypto.prototype, 'subtle', { get: () => undefined })"
    )
    server = BackgroundServer(env.app()).start()
    try:
        page = context.new_page()
        shown(page, server.base_url, sid)  # the first load needs no proof
        server.stop()
        page.wait_for_function(
            "(bar) => document.getElementById('connection').textContent === bar", arg=NOT_DSH_BAR
        )
        page.wait_for_function(
            "() => document.getElementById('toast').textContent"
            ".includes('cannot check that the server at its address is still the dsh web')"
        )
        page.wait_for_function("() => window.dsh.warnings.refused")
        assert page.evaluate("() => window.dsh.socket") is None
    finally:
        server.stop()
        context.close()
