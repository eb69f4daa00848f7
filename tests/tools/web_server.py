"""A real HTTP server on 127.0.0.1 for the ``web_fetch`` tests: pages, redirects, a huge body,
a server that never answers, a binary type, errors. Each request is recorded (path and
headers), so a test can say what was sent and how far a download went."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = "sk-test-THE-SECRET-VALUE-1234"

PAGE = """<!doctype html>
<html><head><title>The  Guide</title>
<style>body { color: red }</style>
<script>var tracking = "SCRIPT-TEXT";</script>
</head>
<body>
<nav><a href="/docs/next.html">Next page</a></nav>
<h1>Install</h1>
<p>Run <code>pip install thing</code> and then <b>restart</b>.</p>
<ul><li>one</li><li>two</li></ul>
<img src="data:image/png;base64,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" alt="logo">
<noscript>NOSCRIPT-TEXT</noscript>
</body></html>
"""

TRICKLE_BYTES = 1000
HUGE_CHUNK = b"x" * 65536
HUGE_LIMIT = 64 * 1024 * 1024
"""The most ``/huge`` would send: far past the tool's cap."""


@dataclass
class Seen:
    """What the server was asked and sent."""

    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    huge_sent: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    """Set at the end: lets a handler that never answers go."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: Seen

    def log_message(self, *_: object) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str | None, **headers: str) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, to: str, **headers: str) -> None:
        self._send(302, b"", "text/plain", Location=to, **headers)

    def do_GET(self) -> None:
        self.seen.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        path = self.path.partition("?")[0]
        if path == "/docs/page.html":
            self._send(200, PAGE.encode(), "text/html; charset=utf-8")
        elif path == "/busy.html":  # markup heavy: little text for its size
            div = '<div class="a-long-class-name another-long-class-name">word</div>\n'
            self._send(200, f"<html><body>{div * 200}</body></html>".encode(), "text/html")
        elif path == "/scripted.html":  # a head of script far longer than the text
            script = "<script>" + "var a = 1;\n" * 500 + "</script>"
            body = f"<html><head>{script}</head><body><p>visible</p></body></html>"
            self._send(200, body.encode(), "text/html")
        elif path == "/latin1.html":
            body = "<html><body><p>caf\u00e9 cr\u00e8me</p></body></html>".encode("latin-1")
            self._send(200, body, "text/html; charset=ISO-8859-1")
        elif path == "/plain.txt":
            self._send(200, b"line one\r\nline two\n", "text/plain")
        elif path == "/data.json":
            self._send(200, b'{"name": "dsh", "tags": ["a", "b"]}', "application/json")
        elif path == "/untyped":
            self._send(200, b"just some text\n", None)
        elif path == "/secret.txt":
            self._send(200, f"the key is {SECRET} here\n".encode(), "text/plain")
        elif path == "/long.txt":
            self._send(200, ("0123456789" * 1000).encode(), "text/plain")
        elif path.startswith("/hop/"):
            left = int(path.rsplit("/", 1)[1])
            to = "/headers" if left == 0 else f"/hop/{left - 1}"
            self._redirect(to, Set_Cookie="session=COOKIE-VALUE; Path=/")
        elif path == "/loop":
            self._redirect("/loop")
        elif path == "/to-file":
            self._redirect("file:///etc/passwd")
        elif path == "/to-userinfo":
            self._redirect(f"http://user:pw@{self.headers['Host']}/plain.txt")
        elif path == "/headers":
            body = json.dumps({k.lower(): v for k, v in self.headers.items()}, sort_keys=True)
            self._send(200, body.encode(), "application/json")
        elif path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(HUGE_LIMIT))
            self.end_headers()
            try:
                while self.seen.huge_sent < HUGE_LIMIT:
                    self.wfile.write(HUGE_CHUNK)
                    self.seen.huge_sent += len(HUGE_CHUNK)
            except OSError:  # the client stopped reading and closed
                pass
        elif path == "/silent":
            self.seen.release.wait()  # never answers while the test runs
        elif path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(TRICKLE_BYTES))
            self.end_headers()
            try:  # a byte every 50 ms: no single read waits long, the whole body takes 50 s
                for _ in range(TRICKLE_BYTES):
                    self.wfile.write(b".")
                    self.wfile.flush()
                    if self.seen.release.wait(0.05):
                        return
            except OSError:  # the client gave up and closed
                pass
        elif path == "/image.png":
            self._send(200, b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "image/png")
        elif path == "/binary":
            self._send(200, b"\x00\x01\x02\xff" * 100, None)
        elif path == "/missing":
            self._send(404, b"<html><body><h1>No such page</h1></body></html>", "text/html")
        elif path == "/teapot":
            self._send(418, b"\x00\x01", "application/octet-stream")
        else:
            self._send(500, b"no route", "text/plain")


@contextmanager
def serving() -> Iterator[tuple[str, Seen]]:
    """A server on 127.0.0.1 (a free port): its base URL and what it saw."""
    seen = Seen()
    handler = type("BoundHandler", (Handler,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        seen.release.set()
        server.shutdown()
        server.server_close()
        thread.join()
