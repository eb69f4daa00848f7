"""The access token, where a request may carry it, and the binding rules.

API requests present the token as ``Authorization: Bearer <token>``; the live WebSocket (a
browser cannot set its headers) as the subprotocol ``dsh.token.<token>`` next to ``dsh``. The
page (``GET /``) and its client files (``/s/…``) are the public client code and need no token:
the page's script takes the token from the launch URL's ``?token=``, keeps it in the origin's
``localStorage`` once the server accepted it (a link's token the server refuses is never kept:
the page uses the kept one if that works, and says so) and removes the query from the address
bar with ``history.replaceState``, so it is not left in the address bar, in the history or in
copied links. No cookie holds it: a browser sends a cookie for ``127.0.0.1`` to a server on any
port of that address, so another local user's server the browser visited would have received
the token. Comparison is constant-time (``hmac.compare_digest``).

The token's entropy is what keeps it from being guessed: :func:`new_token` draws 32 random bytes
(256 bits, 43 characters), and at a million guesses a second (this server answers about a
thousand on a two-core machine) finding it would take over 10^63 years. A token chosen with
``--token`` is as strong as it was chosen: binding beyond loopback needs
:data:`MIN_EXPOSED_TOKEN_CHARS` characters, and ``dsh web`` warns under :data:`WEAK_TOKEN_CHARS`.
So a request presenting the right token is always served, however many wrong ones came before
it from its address; from an address that presented :data:`MAX_FAILURES` distinct wrong tokens
within :data:`FAILURE_WINDOW` seconds, wrong tokens are answered ``429`` instead of ``401``
(:class:`FailureLimiter` says why, and why no lock-out).

:class:`OriginGuard` is a second line if the token leaks: the ``Host`` must be one the server
answers to (a loopback bind lists its own names, which defeats DNS rebinding), a WebSocket
handshake or a state-changing request with an ``Origin`` must come from the same origin, and a
request a browser marks as made by another site's page (``Sec-Fetch-Site``) is refused before
its token is checked (so it never counts as a guess).

The server binds to loopback unless the token was chosen explicitly (``--token`` or
``DSH_WEB_TOKEN``), and then only with a token of at least :data:`MIN_EXPOSED_TOKEN_CHARS`
characters: exposing the agent (which runs shell commands) to a network must be deliberate.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
import time
from collections.abc import Callable, Collection
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dsh.errors import UsageError
from dsh.web.errors import FORBIDDEN, RATE_LIMITED, UNAUTHORIZED, ApiError

STATIC_PREFIX = "/s/"
LAUNCH_PATH = "/api/launch"
"""Where the page trades a launch code for the token (``dsh.web.launch``)."""
HELLO_PATH = "/api/hello"
"""Where the server proves it knows the token before a page sends it again (``dsh.web.hello``)."""
WS_PROTOCOL = "dsh"
WS_TOKEN_PREFIX = "dsh.token."
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9._~-]+$")
WEAK_TOKEN_CHARS = 16
MIN_EXPOSED_TOKEN_CHARS = 32
MAX_FAILURES = 20
FAILURE_WINDOW = 60.0
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
GUESSING = (
    "too many different wrong access tokens from this address: wrong ones are refused for a "
    "minute; open the URL that `dsh web` printed"
)


def new_token() -> str:
    """A fresh random token (URL-safe, 256 bits)."""
    return secrets.token_urlsafe(32)


def check_token_text(token: str) -> None:
    """Refuse a user-given token that cannot travel in a URL query unescaped."""
    if not TOKEN_PATTERN.match(token):
        raise UsageError("--token (or DSH_WEB_TOKEN) may contain only letters, digits and - . _ ~")


def token_matches(expected: str, given: str | None) -> bool:
    if given is None:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def check_bind(host: str, *, explicit_token: bool, token: str | None = None) -> None:
    """Refuse a non-loopback bind unless the token was chosen explicitly and is long enough."""
    if is_loopback(host):
        return
    if not explicit_token:
        raise UsageError(
            f"refusing to bind {host}: it is not a loopback address; pass --token TOKEN "
            "(or set DSH_WEB_TOKEN) to expose dsh web to other machines"
        )
    if token is not None and len(token) < MIN_EXPOSED_TOKEN_CHARS:
        raise UsageError(
            f"refusing to bind {host} with a {len(token)}-character token: a token for a "
            f"non-loopback address needs at least {MIN_EXPOSED_TOKEN_CHARS} characters"
        )


def loopback_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` values a server on a loopback ``host:port`` answers to."""
    names = {host.strip("[]").lower(), "127.0.0.1", "localhost", "::1"}
    bracketed = {f"[{n}]" if ":" in n else n for n in names}
    hosts = {f"{n}:{port}" for n in bracketed}
    return frozenset(hosts | bracketed if port == 80 else hosts)  # browsers omit :80


def _header(scope: Scope, wanted: bytes) -> str | None:
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == wanted:
            return value.decode("latin-1")
    return None


def _bearer(scope: Scope) -> str | None:
    value = _header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, credentials = value.partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else None


def _ws_token(scope: Scope) -> str | None:
    """The token a WebSocket handshake offers as the subprotocol ``dsh.token.<token>``."""
    for protocol in scope.get("subprotocols", []):
        if protocol.startswith(WS_TOKEN_PREFIX):
            return str(protocol[len(WS_TOKEN_PREFIX) :])
    return None


def is_page_request(scope: Scope) -> bool:
    return scope["type"] == "http" and scope.get("method") == "GET" and scope.get("path") == "/"


def is_public(scope: Scope) -> bool:
    """The page and its client files: public code, served without the token (the page's
    script holds the token, and presents it on every API call and the live stream); and the
    launch code's trade for the token (``dsh.web.launch``), where the code stands for it; and
    the server's proof that it knows the token (``dsh.web.hello``), asked without it."""
    if scope["type"] != "http":
        return False
    path: str = scope.get("path", "")
    if scope.get("method") == "POST":
        return path == LAUNCH_PATH
    if scope.get("method") not in ("GET", "HEAD"):
        return False
    return path in ("/", HELLO_PATH) or path.startswith(STATIC_PREFIX)


def request_token(scope: Scope) -> str | None:
    """The token a request presents, where it is allowed to present it."""
    bearer = _bearer(scope)
    if bearer is not None or scope["type"] != "websocket":
        return bearer
    return _ws_token(scope)


class FailureLimiter:
    """Guesses of the token per client address in a sliding window: once ``limit`` distinct
    wrong tokens failed from an address within ``window`` seconds, its wrong tokens are answered
    ``429`` (with ``Retry-After``) instead of ``401`` until fewer than ``limit`` of them are
    within the window. The right token is never refused: :class:`TokenAuth` compares it before
    it asks the limiter.

    A guess is a distinct wrong token. Presenting the same wrong token again learns nothing new
    (a tab opened with a stale ``?token=`` presents it on every call and reconnect), and a
    request with no token guesses nothing, so neither counts again.

    Why no lock-out. The limit used to refuse the address everything for the window, the right
    token too (were it served, a guesser would know it by an answer other than ``429``). Then
    anything that can reach the port — any local process, a page in a browser that sends no
    ``Sec-Fetch-Site``, a machine on the network when bound beyond loopback — locked the user out
    with ``limit`` made-up tokens, again every minute; on loopback every client is the user's own
    ``127.0.0.1``. What the lock-out bought, a cap on guessing, is not needed: the token's 256
    random bits (:func:`new_token`) are out of reach of any rate of guessing. Only a weak token
    chosen with ``--token`` loses something, and ``dsh web`` warns about a short one.

    With the right token always served, the ``429`` caps nothing either: a guesser tells a right
    guess by its ``200``. It is kept for what it still does. A client presenting ever new wrong
    tokens is told plainly that it is refused as a guesser and for how long, apart from a stale
    token's ``401``; and the record stays small, since an address's wrong tokens are recorded
    only up to ``limit``, as SHA-256 digests (never as given), so no flood of guesses grows it."""

    def __init__(
        self,
        limit: int = MAX_FAILURES,
        window: float = FAILURE_WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._failures: dict[str, dict[bytes, float]] = {}
        """Address → the digest of each wrong token it presented → when that last failed."""

    def _recent(self, client: str) -> dict[bytes, float]:
        cutoff = self.clock() - self.window
        recent = {d: t for d, t in self._failures.get(client, {}).items() if t > cutoff}
        if recent:
            self._failures[client] = recent
        else:
            self._failures.pop(client, None)
        return recent

    def over_limit(self, client: str) -> bool:
        """True once ``client`` presented ``limit`` distinct wrong tokens within the window."""
        return len(self._recent(client)) >= self.limit

    def record(self, client: str, token: str | None) -> None:
        """``client`` presented ``token`` (None: none) and it was not the right one; past the
        limit nothing more is recorded."""
        if token is None or self.over_limit(client):
            return
        digest = hashlib.sha256(token.encode()).digest()
        self._failures.setdefault(client, {})[digest] = self.clock()
        if len(self._failures) > 10_000:  # a flood of addresses: forget the quiet ones
            for quiet in [c for c in self._failures if not self._recent(c)]:
                self._failures.pop(quiet, None)


async def _deny(scope: Scope, receive: Receive, send: Send, error: ApiError) -> None:
    headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else {}
    if error.status == 429:
        headers["Retry-After"] = str(int(FAILURE_WINDOW))
    response = JSONResponse(error.body(), status_code=error.status, headers=headers)
    if scope["type"] == "websocket":
        if "websocket.http.response" in scope.get("extensions", {}):
            await response(scope, receive, send)
        else:
            await send({"type": "websocket.close", "code": 4000 + error.status, "reason": ""})
        return
    await response(scope, receive, send)


class TokenAuth:
    """ASGI middleware: the request is served if it presents the token, always; else 401
    (JSON), or 429 for a wrong token from an address past the guesses' limit."""

    def __init__(self, app: ASGIApp, token: str, limiter: FailureLimiter | None = None) -> None:
        self.app = app
        self.token = token
        self.limiter = limiter or FailureLimiter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or is_public(scope):
            await self.app(scope, receive, send)
            return
        presented = request_token(scope)
        if token_matches(self.token, presented):
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("?", 0))[0]
        if presented is not None and self.limiter.over_limit(client):
            await _deny(scope, receive, send, ApiError(429, RATE_LIMITED, GUESSING))
            return
        self.limiter.record(client, presented)
        error = ApiError(
            401,
            UNAUTHORIZED,
            "missing or wrong access token: open the URL that `dsh web` printed",
        )
        await _deny(scope, receive, send, error)


class OriginGuard:
    """ASGI middleware: 403 for a ``Host`` the server does not answer to (when ``hosts`` is
    given), and for a WebSocket or state-changing request whose ``Origin`` is another origin."""

    def __init__(self, app: ASGIApp, hosts: Collection[str] | None = None) -> None:
        self.app = app
        self.hosts = None if hosts is None else frozenset(h.lower() for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            problem = self._problem(scope)
            if problem is not None:
                await _deny(scope, receive, send, ApiError(403, FORBIDDEN, problem))
                return
        await self.app(scope, receive, send)

    def _problem(self, scope: Scope) -> str | None:
        host = (_header(scope, b"host") or "").lower()
        if self.hosts is not None and host not in self.hosts:
            return "this server does not answer to that Host (open the URL `dsh web` printed)"
        if _from_another_site(scope):
            return "request from another site refused (open the URL `dsh web` printed)"
        if scope["type"] == "http" and scope.get("method") in SAFE_METHODS:
            return None
        origin = _header(scope, b"origin")
        if origin is None:
            return None  # not a browser, or a same-origin GET-like request
        parts = urlsplit(origin.lower())
        if parts.scheme not in ("http", "https", "ws", "wss") or parts.netloc != host:
            return "cross-origin request refused"
        return None


def _from_another_site(scope: Scope) -> bool:
    """A request a browser says another site's page made (``Sec-Fetch-Site``), other than a
    top-level navigation (a link to the launch URL). Refused before the token is checked, so such
    requests never count as guesses: a page on any site could otherwise spend the failure limit
    of the user's address by fetching the API with made-up tokens."""
    if _header(scope, b"sec-fetch-site") not in ("cross-site", "same-site"):
        return False
    navigation = (
        _header(scope, b"sec-fetch-mode") == "navigate"
        and _header(scope, b"sec-fetch-dest") == "document"
    )
    return not (navigation and is_page_request(scope))


CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)


class SecurityHeaders:
    """Headers on every HTTP response: the CSP, no referrer (the launch URL holds the token),
    no sniffing, no framing, no caching of API answers. No CORS headers are ever sent."""

    HEADERS = (
        (b"content-security-policy", CSP.encode()),
        (b"referrer-policy", b"no-referrer"),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"cache-control", b"no-store"),
    )

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name for name, _ in headers}
                headers.extend(h for h in self.HEADERS if h[0] not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


LAUNCH_CODE_SECONDS = 600.0
"""How long the browser ``dsh web`` opens has to ask for the page (a cold browser can take a
while to start)."""


class LaunchCodes:
    """One-use codes that open the page with the token, for the browser ``dsh web`` starts.

    A browser is started with its URL on the command line, where every local user sees it in
    ``ps`` for as long as the browser runs; a launch URL holding the token gave it away. The
    browser is given ``/?launch=<code>`` instead: the page's script trades that code for the
    token (``POST /api/launch``, ``dsh.web.launch``) once, and within
    :data:`LAUNCH_CODE_SECONDS`; after that the code opens nothing. Someone
    watching ``ps`` who uses the code first gets the token, but then the user's own page opens
    without one and says so — a race of the browser's start, not of its whole life.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._open: dict[str, float] = {}

    def new(self) -> str:
        """A fresh code (256 random bits), good once."""
        code = secrets.token_urlsafe(32)
        self._open[code] = self._clock() + LAUNCH_CODE_SECONDS
        return code

    def redeem(self, code: str) -> bool:
        """True the first time ``code`` is presented in time; it is spent either way."""
        for known in list(self._open):
            if hmac.compare_digest(known, code):
                return self._open.pop(known) >= self._clock()
        return False
