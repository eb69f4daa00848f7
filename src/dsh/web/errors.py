"""Typed JSON errors: every failure the API reports is ``{"error": {"code", "message"}}``.

``ApiError`` carries an HTTP status, a stable machine-readable code and a one-line message for
people; ``from_dsh_error`` maps the harness's own error tree onto it so a route never has to.

The message is what the page shows (its error toast, a panel's status line), so it is made as
every face shows an error: an error's text (an exception's, a body's parse error) goes in as
``dsh.errors.error_line`` makes it, and ``ApiError`` makes the whole message such a line too, at
most ``API_MESSAGE_CHARS`` long (the error's text and the API's words around it), whatever a
route put in it (a session id or a path from the request, quoted).
"""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dsh.errors import (
    ERROR_LINE_CHARS,
    ConfigError,
    DshError,
    LogCorruptError,
    PromptTooLarge,
    SessionLockedError,
    SessionNotFoundError,
    StoreError,
    UsageError,
    error_line,
)

API_MESSAGE_CHARS = ERROR_LINE_CHARS + 100
"""How long an error's message gets: an ``error_line`` and the API's words around it
("the turn failed: …", "invalid request body: …"); the page's toast cuts at the same length
(``API_MESSAGE_CHARS`` in ``static/projection.js``)."""

# Codes (stable; clients switch on them).
INVALID_JSON = "INVALID_JSON"
INVALID_ARGUMENT = "INVALID_ARGUMENT"
UNAUTHORIZED = "UNAUTHORIZED"
FORBIDDEN = "FORBIDDEN"
RATE_LIMITED = "RATE_LIMITED"
NOT_FOUND = "NOT_FOUND"
SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
APPROVAL_NOT_FOUND = "APPROVAL_NOT_FOUND"
METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
PROMPT_TOO_LARGE = "PROMPT_TOO_LARGE"
SESSION_BUSY = "SESSION_BUSY"
SESSION_LOCKED = "SESSION_LOCKED"
SESSION_NOT_OPEN = "SESSION_NOT_OPEN"
NOT_RUNNING = "NOT_RUNNING"
COMPACTION_DISABLED = "COMPACTION_DISABLED"
PROVIDER_NOT_CONFIGURED = "PROVIDER_NOT_CONFIGURED"
LOG_CORRUPT = "LOG_CORRUPT"
STORE_ERROR = "STORE_ERROR"
INTERNAL = "INTERNAL"

_HTTP_CODES = {
    400: INVALID_ARGUMENT,
    401: UNAUTHORIZED,
    404: NOT_FOUND,
    405: METHOD_NOT_ALLOWED,
    413: PAYLOAD_TOO_LARGE,
}


class ApiError(Exception):
    """An error the API reports as ``status`` with ``{"error": {"code", "message", …extra}}``."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        message = error_line(message, API_MESSAGE_CHARS)
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.extra}}

    def response(self, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


def bad_request(message: str, code: str = INVALID_ARGUMENT) -> ApiError:
    return ApiError(400, code, message)


def session_not_found(session_id: str) -> ApiError:
    return ApiError(404, SESSION_NOT_FOUND, f"no session {session_id!r}")


def from_dsh_error(exc: DshError) -> ApiError:
    """The API form of a harness error (its message as ``error_line`` makes it)."""
    message = error_line(str(exc))
    if isinstance(exc, SessionNotFoundError):
        return ApiError(404, SESSION_NOT_FOUND, message)
    if isinstance(exc, SessionLockedError):
        return ApiError(409, SESSION_LOCKED, message, holderPid=exc.holder_pid)
    if isinstance(exc, LogCorruptError):
        return ApiError(500, LOG_CORRUPT, message)
    if isinstance(exc, StoreError):
        return ApiError(500, STORE_ERROR, message)
    if isinstance(exc, ConfigError):
        return ApiError(503, PROVIDER_NOT_CONFIGURED, message)
    if isinstance(exc, PromptTooLarge):  # nothing was logged; the page keeps the draft
        return ApiError(413, PROMPT_TOO_LARGE, message)
    if isinstance(exc, UsageError):
        return ApiError(400, INVALID_ARGUMENT, message)
    return ApiError(500, INTERNAL, message)


async def handle_api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return exc.response()


async def handle_dsh_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DshError)
    return from_dsh_error(exc).response()


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 (unknown route, wrong method) in the same JSON shape. The request
    path is never echoed: it may hold the access token (an old ``/s/<token>/…`` link)."""
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, INTERNAL if exc.status_code >= 500 else NOT_FOUND)
    message = {
        404: "no such route or file",
        405: f"{request.method} is not allowed on this route",
    }.get(exc.status_code, str(exc.detail))
    headers = dict(exc.headers) if exc.headers else None
    return ApiError(exc.status_code, code, message).response(headers=headers)


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    return ApiError(500, INTERNAL, f"internal error: {type(exc).__name__}").response()
