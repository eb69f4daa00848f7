"""The access token and the binding rules.

Every request carries the token: ``Authorization: Bearer <token>`` anywhere; ``?token=`` only
on the first page load (``GET /``) and the live stream (a browser cannot set headers there);
static files carry it in their path (``/s/<token>/…``) so that ES modules importing each other
by relative URL keep it. Comparison is constant-time (``hmac.compare_digest``).

The server binds to loopback unless the user passes ``--token`` explicitly: a generated token
printed in a terminal is fine for this machine, but exposing the agent (which runs shell
commands) to a network must be a deliberate choice.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from urllib.parse import parse_qs

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dsh.errors import UsageError
from dsh.web.errors import UNAUTHORIZED, ApiError

STATIC_PREFIX = "/s/"
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9._~-]+$")
WEAK_TOKEN_CHARS = 16


def new_token() -> str:
    """A fresh random token (URL-safe, 256 bits)."""
    return secrets.token_urlsafe(32)


def check_token_text(token: str) -> None:
    """Refuse a user-given token that cannot travel in a URL path unescaped."""
    if not TOKEN_PATTERN.match(token):
        raise UsageError("--token may contain only letters, digits and - . _ ~")


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


def check_bind(host: str, *, explicit_token: bool) -> None:
    """Refuse a non-loopback bind unless the token was chosen explicitly."""
    if not is_loopback(host) and not explicit_token:
        raise UsageError(
            f"refusing to bind {host}: it is not a loopback address; pass --token TOKEN "
            "to expose dsh web to other machines"
        )


def _bearer(scope: Scope) -> str | None:
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                return credentials.strip()
    return None


def _query_token(scope: Scope) -> str | None:
    raw: bytes = scope.get("query_string", b"")
    values = parse_qs(raw.decode("latin-1")).get("token")
    return values[-1] if values else None


def _path_token(path: str) -> str | None:
    if not path.startswith(STATIC_PREFIX):
        return None
    token, slash, _ = path[len(STATIC_PREFIX) :].partition("/")
    return token if slash else None


def request_token(scope: Scope) -> str | None:
    """The token a request presents, where it is allowed to present it."""
    bearer = _bearer(scope)
    if bearer is not None:
        return bearer
    path: str = scope.get("path", "")
    if scope["type"] == "websocket" or (scope.get("method") == "GET" and path == "/"):
        return _query_token(scope)
    return _path_token(path)


class TokenAuth:
    """ASGI middleware: 401 (JSON) unless the request presents the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or token_matches(
            self.token, request_token(scope)
        ):
            await self.app(scope, receive, send)
            return
        error = ApiError(
            401,
            UNAUTHORIZED,
            "missing or wrong access token: open the URL that `dsh web` printed",
        )
        response = JSONResponse(
            error.body(), status_code=401, headers={"WWW-Authenticate": "Bearer"}
        )
        if scope["type"] == "websocket":
            if "websocket.http.response" in scope.get("extensions", {}):
                await response(scope, receive, send)
            else:
                await send({"type": "websocket.close", "code": 4401, "reason": "unauthorized"})
            return
        await response(scope, receive, send)


class SecurityHeaders:
    """Headers on every HTTP response: no referrer (the page URL holds the token), no sniffing,
    no framing, no caching of API answers. No CORS headers are ever sent."""

    HEADERS = (
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
