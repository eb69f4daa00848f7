"""Provider error codes, and the ONE place wire errors are mapped to them.

Adapters call ``map_openai_error`` / ``map_anthropic_error`` on whatever their SDK raised (or
``map_http_status`` / ``map_error_body`` when they only have a status or an error body) and raise
the resulting ``ProviderError``; the loop only ever looks at ``code`` and ``retryable``.

Both SDKs send their requests with ``httpx2`` (dsh's own requests use ``httpx``): an error either
raises is mapped here too, whether an SDK wrapped it (a connection error caused by it) or not.
A URL no request can be sent to (``InvalidURL``, ``UnsupportedProtocol``) is ``INVALID_URL``
and is not retried; config validation refuses such a base URL first (``dsh.config``), so this
is what a URL that got past it (a recorded session's, an adapter built directly) meets.

An exception group (what an ``anyio`` task group or ``asyncio.TaskGroup`` raises when a task in
it failed, such as a connection refused) maps as its first leaf that maps to a code other than
``UNKNOWN``, in the group's own order, depth first (``_map_group``): a refused port is
``CONNECTION`` inside a group as outside it. The first mappable leaf, not a ranking of codes:
the group's order is the one the failures were recorded in, and no code is more specific than
another. A ``ProviderError`` leaf keeps its code; a group with no mappable leaf is ``UNKNOWN``,
as its first leaf says.

A connection that could not be made is ``CONNECTION``, retried with back-off: on a network a
server's blip (a restart behind a proxy, a dropped route) is what retries are for. One
exception (``_connection_error``): a connection *refused* by a loopback address (127.0.0.0/8,
``::1``, ``localhost``) is not retried. Nothing listens on that port of this machine, and a
local server that is not running does not start within the back-off's few seconds, so waiting
them out only delays the one useful line: the call fails at once, naming the address.
"""

from __future__ import annotations

import errno
import ipaddress
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol

from dsh.config import base_url_problem, redact
from dsh.errors import ProviderError


class ErrorCode(StrEnum):
    CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
    RATE_LIMITED = "RATE_LIMITED"
    AUTH = "AUTH"
    UNAVAILABLE = "UNAVAILABLE"
    BAD_REQUEST = "BAD_REQUEST"
    TIMEOUT = "TIMEOUT"
    CONNECTION = "CONNECTION"
    INVALID_RESPONSE = "INVALID_RESPONSE"
    INVALID_URL = "INVALID_URL"
    """The endpoint's URL cannot be requested (no http(s) scheme, no host, a control
    character): a setting to fix, never retried."""
    UNKNOWN = "UNKNOWN"


RETRYABLE_CODES = frozenset(
    {ErrorCode.RATE_LIMITED, ErrorCode.UNAVAILABLE, ErrorCode.TIMEOUT, ErrorCode.CONNECTION}
)


def provider_error(
    code: ErrorCode, message: str, *, status: int | None = None, retry_after: float | None = None
) -> ProviderError:
    """A ProviderError whose retryable flag follows the code."""
    retryable = code in RETRYABLE_CODES
    return ProviderError(
        str(code),
        message,
        retryable=retryable,
        status=status,
        retry_after=retry_after if retryable else None,
    )


MASKED_CREDENTIAL = "[masked credential]"
MIN_CREDENTIAL_CHARS = 8
"""A shorter value (``none``, a placeholder) is not looked for: it would mask ordinary words."""


def credentials_of(api_key: str | None, headers: Mapping[str, str]) -> tuple[str, ...]:
    """The values a provider sends that an error's text must never carry: its key and its
    ``provider.headers`` values, longest first (a value inside another is masked as part of
    the longer one)."""
    values = {v for v in (api_key, *headers.values()) if v and len(v) >= MIN_CREDENTIAL_CHARS}
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


class SdkClient(Protocol):
    """What both SDKs' clients say of what they send (``openai.AsyncOpenAI``,
    ``anthropic.AsyncAnthropic``)."""

    @property
    def api_key(self) -> str | None: ...

    @property
    def default_headers(self) -> Mapping[str, object]: ...


def client_credentials(client: SdkClient, header_names: Sequence[str]) -> tuple[str, ...]:
    """What ``client`` sends that an error's text must not carry: its key and the values of
    the ``provider.headers`` named ``header_names`` it was made with (read off the client, so
    the key stays the client's own)."""
    sent = client.default_headers
    return credentials_of(
        client.api_key, {n: v for n in header_names if isinstance(v := sent.get(n), str)}
    )


def without_credentials(error: ProviderError, credentials: Sequence[str]) -> ProviderError:
    """``error`` with each of ``credentials`` in its text replaced by ``[masked credential]``:
    a gateway or proxy that echoes what it received (``Incorrect API key provided: Bearer
    sk-…``) must not put the key in the log, an export, the web page or a terminal. The same
    error when its text holds none of them."""
    detail = error.detail
    for value in credentials:
        detail = detail.replace(value, MASKED_CREDENTIAL)
    if detail == error.detail:
        return error
    return ProviderError(
        error.code,
        detail,
        retryable=error.retryable,
        status=error.status,
        retry_after=error.retry_after,
    )


def base_url_refusal(base_url: str) -> ProviderError | None:
    """The ``INVALID_URL`` error every call to ``base_url`` fails with when it breaks the rule
    config validation refuses a base URL by (``dsh.config.base_url_problem``), else None: an
    adapter given such a URL directly (validation bypassed) sends nothing."""
    problem = base_url_problem(base_url)
    return None if problem is None else provider_error(ErrorCode.INVALID_URL, f"base URL {problem}")


EVENT_STREAM = "text/event-stream"


def content_type(stream: object) -> str | None:
    """The ``Content-Type`` an SDK's ``stream`` was answered with (None: not known)."""
    headers = getattr(getattr(stream, "response", None), "headers", None)
    return headers.get("content-type") if headers is not None else None


def unfinished_stream(
    missing: str, content_type: str | None, base_url: str | None
) -> ProviderError:
    """The ``INVALID_RESPONSE`` error of a streamed answer that ended without its ``missing``
    end (``finish reason``, ``stop reason``). An answer that was not an event stream at all
    (``content_type``: a proxy's login page or a wrong base URL's page answers 200 with
    ``text/html``; a server that ignored ``stream`` answers ``application/json``) is said as
    that, with its content type and the ``base_url`` to check, not as a stream cut short."""
    media = (content_type or "").partition(";")[0].strip().lower()
    if media == EVENT_STREAM:
        return provider_error(ErrorCode.INVALID_RESPONSE, f"stream ended without a {missing}")
    said = f"Content-Type {media}" if media else "no Content-Type"
    where = f" {redact(base_url)}" if base_url else ""
    return provider_error(
        ErrorCode.INVALID_RESPONSE,
        f"the server did not send an event stream ({said}, not {EVENT_STREAM}): check that "
        f"the base URL{where} is the API's (a wrong one, or a proxy's login page, answers so)",
    )


def retry_after_seconds(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, else ``Retry-After`` in seconds or as
    an HTTP date (None when absent or unreadable; a date in the past is no wait)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = lowered.get(key, "").strip()
        try:
            seconds = float(value) * scale
        except ValueError:
            seconds = None
        if seconds is not None and seconds == seconds and 0 <= seconds < float("inf"):
            return seconds
    from email.utils import parsedate_to_datetime  # here: a start needs none of email

    try:
        when = parsedate_to_datetime(lowered.get("retry-after", ""))
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


# Wording servers use when the prompt does not fit (OpenAI, DeepSeek, vLLM, llama.cpp, Ollama,
# Anthropic).
OVERFLOW_PHRASES = (
    "maximum context length",
    "context_length_exceeded",
    "context length exceeded",
    "exceeds the context window",
    "exceed context limit",
    "exceeds context limit",
    "exceed_context_size",
    "exceeds the available context size",
    "exceeds the context length",
    "too many tokens",
    "prompt is too long",
    "prompt too long",
    "input is too long",
    "reduce the length of the messages",
)

# Error ``type``/``code`` values found in error bodies (HTTP or mid-stream), by code.
_BODY_KINDS: dict[str, ErrorCode] = {
    "context_length_exceeded": ErrorCode.CONTEXT_WINDOW_EXCEEDED,
    "rate_limit_error": ErrorCode.RATE_LIMITED,
    "rate_limit_exceeded": ErrorCode.RATE_LIMITED,
    "insufficient_quota": ErrorCode.RATE_LIMITED,
    "overloaded_error": ErrorCode.UNAVAILABLE,
    "api_error": ErrorCode.UNAVAILABLE,
    "server_error": ErrorCode.UNAVAILABLE,
    "service_unavailable": ErrorCode.UNAVAILABLE,
    "timeout_error": ErrorCode.TIMEOUT,
    "authentication_error": ErrorCode.AUTH,
    "invalid_api_key": ErrorCode.AUTH,
    "permission_error": ErrorCode.AUTH,
    "invalid_request_error": ErrorCode.BAD_REQUEST,
    "not_found_error": ErrorCode.BAD_REQUEST,
    "request_too_large": ErrorCode.BAD_REQUEST,
}


def is_context_overflow(message: str) -> bool:
    """True if an error message says the prompt does not fit the model's context window."""
    lowered = message.lower()
    return any(phrase in lowered for phrase in OVERFLOW_PHRASES)


JINJA_HINT = "start llama-server with --jinja (dsh sends tool schemas)"
"""What a llama-server started with ``--no-jinja`` (older builds' default) needs: it answers
every request carrying tools ``500 tools param requires --jinja flag``, so no retry helps."""


def needs_jinja(message: str) -> bool:
    """Whether an error's ``message`` is llama-server refusing tools for want of ``--jinja``."""
    return "--jinja" in message.lower()


def map_http_status(
    status: int, message: str, *, retry_after: float | None = None
) -> ProviderError:
    """The error for an HTTP error ``status`` whose body said ``message``. A server refusing
    the tools for want of a flag (``needs_jinja``) is ``BAD_REQUEST`` whatever its status (its
    500 is no passing fault: not retried), with ``JINJA_HINT``."""
    if needs_jinja(message):
        return provider_error(ErrorCode.BAD_REQUEST, f"{message}: {JINJA_HINT}", status=status)
    if status in (400, 413, 422) and is_context_overflow(message):
        code = ErrorCode.CONTEXT_WINDOW_EXCEEDED
    elif status in (401, 403):
        code = ErrorCode.AUTH
    elif status == 429:
        code = ErrorCode.RATE_LIMITED
    elif status == 408:
        code = ErrorCode.TIMEOUT
    elif status >= 500:
        code = ErrorCode.UNAVAILABLE
    elif 400 <= status < 500:
        code = ErrorCode.BAD_REQUEST
    else:
        code = ErrorCode.UNKNOWN
    return provider_error(code, message, status=status, retry_after=retry_after)


def map_error_body(body: object, message: str) -> ProviderError:
    """The error for an error object that arrived without an HTTP error status (mid-stream).

    ``body`` is the ``error`` object (or the whole payload holding one); its ``type`` / ``code``
    decide, and overflow wording in the message wins over everything.
    """
    error = _error_object(body)
    text = _body_message(error) or message
    if is_context_overflow(text) or is_context_overflow(message):
        return provider_error(ErrorCode.CONTEXT_WINDOW_EXCEEDED, text)
    for key in ("code", "type"):
        kind = error.get(key)
        if isinstance(kind, str) and kind in _BODY_KINDS:
            return provider_error(_BODY_KINDS[kind], text)
    status = error.get("code")  # some servers put an HTTP status there (``"code": 500``)
    if isinstance(status, int) and not isinstance(status, bool) and 400 <= status < 600:
        return map_http_status(status, text)
    return provider_error(ErrorCode.UNKNOWN, text)


def map_openai_error(exc: BaseException) -> ProviderError:
    """Map anything the ``openai`` SDK raised (status, stream, timeout, connection errors)."""
    # Imported here so the loop and the keyless providers never pay for importing the SDK.
    import openai

    if isinstance(exc, BaseExceptionGroup):
        return _map_group(exc, map_openai_error)
    if isinstance(exc, openai.APITimeoutError):
        return provider_error(ErrorCode.TIMEOUT, str(exc))
    if isinstance(exc, openai.APIConnectionError) and _refused_request(exc.__cause__):
        return _unexpected(exc.__cause__)
    if isinstance(exc, openai.APIConnectionError):
        return _connection_error(exc)
    if isinstance(exc, openai.APIStatusError):
        error = _error_object(exc.body)
        text = _body_message(error) or exc.message
        if exc.code == "context_length_exceeded":
            return provider_error(ErrorCode.CONTEXT_WINDOW_EXCEEDED, text, status=exc.status_code)
        return map_http_status(exc.status_code, text, retry_after=_wait(exc))
    if isinstance(exc, openai.APIError):
        return map_error_body(exc.body, exc.message)
    return _unexpected(exc)


def map_anthropic_error(exc: BaseException) -> ProviderError:
    """Map anything the ``anthropic`` SDK raised (status, stream, timeout, connection errors)."""
    import anthropic

    if isinstance(exc, BaseExceptionGroup):
        return _map_group(exc, map_anthropic_error)
    if isinstance(exc, anthropic.APITimeoutError):
        return provider_error(ErrorCode.TIMEOUT, "request timed out")
    if isinstance(exc, anthropic.APIConnectionError) and _refused_request(exc.__cause__):
        return _unexpected(exc.__cause__)
    if isinstance(exc, anthropic.APIConnectionError):
        return _connection_error(exc)
    if isinstance(exc, anthropic.APIStatusError):
        text = exc.api_message or exc.message
        if exc.status_code < 400:
            # An ``event: error`` inside a 200 stream: the SDK raises it with the stream's status.
            return map_error_body(exc.body, text)
        return map_http_status(exc.status_code, text, retry_after=_wait(exc))
    if isinstance(exc, anthropic.APIError):
        return map_error_body(exc.body, exc.message)
    return _unexpected(exc)


def _map_group(
    group: BaseExceptionGroup[BaseException], mapper: Callable[[BaseException], ProviderError]
) -> ProviderError:
    """The error of the first leaf of ``group`` (depth first, in order) that ``mapper`` maps to
    a code other than ``UNKNOWN``; else the first leaf's (``UNKNOWN``)."""
    first: ProviderError | None = None
    for leaf in _leaves(group):
        error = leaf if isinstance(leaf, ProviderError) else mapper(leaf)
        if error.code != ErrorCode.UNKNOWN:
            return error
        first = first or error
    return first or _unexpected(group)  # a group always holds a leaf: ``first`` is set


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    """The exceptions inside ``group`` and the groups nested in it, in order, depth first."""
    for inner in group.exceptions:
        if isinstance(inner, BaseExceptionGroup):
            yield from _leaves(inner)
        else:
            yield inner


def _http_libraries() -> list[object]:
    """The loaded HTTP libraries whose errors are mapped: ``httpx2`` (what both SDKs send
    with, and raise when a stream breaks after the response started) and ``httpx``. One not
    loaded raised nothing."""
    return [module for name in ("httpx2", "httpx") if (module := sys.modules.get(name))]


def _is_a(exc: object, name: str) -> bool:
    """Whether ``exc`` is an instance of the error class ``name`` of a loaded HTTP library."""
    classes = tuple(getattr(module, name) for module in _http_libraries())
    return isinstance(exc, classes)


def _refused_request(exc: object) -> bool:
    """Whether ``exc`` says the request could not be sent as asked (its URL, a header), which
    no retry changes."""
    refusals = ("InvalidURL", "UnsupportedProtocol", "LocalProtocolError")
    return any(_is_a(exc, name) for name in refusals)


def _unexpected(exc: BaseException | None) -> ProviderError:
    said = f"{type(exc).__name__}: {exc}"
    if _is_a(exc, "InvalidURL") or _is_a(exc, "UnsupportedProtocol"):
        return provider_error(ErrorCode.INVALID_URL, f"the endpoint's URL is unusable: {said}")
    if _is_a(exc, "LocalProtocolError"):  # the request itself (a header, the URL) is malformed
        return provider_error(ErrorCode.BAD_REQUEST, f"the request could not be sent: {said}")
    if _is_a(exc, "TimeoutException"):
        return provider_error(ErrorCode.TIMEOUT, said)
    if _is_a(exc, "TransportError") and exc is not None:
        return _connection_error(exc, said)
    if isinstance(exc, ValueError):  # malformed JSON in the stream, among others
        return provider_error(ErrorCode.INVALID_RESPONSE, f"malformed response: {exc}")
    return provider_error(ErrorCode.UNKNOWN, said)


def _connection_error(exc: BaseException, said: str | None = None) -> ProviderError:
    """``CONNECTION`` for a connection that failed (``said``: its text, else the error's
    with its cause); not retryable when a loopback address refused it (module docstring)."""
    where = _request_address(exc)
    if where is not None and _loopback(where[0]) and connection_refused(exc):
        host, port = where
        shown = f"[{host}]" if ":" in host else host
        return ProviderError(
            str(ErrorCode.CONNECTION),
            f"nothing listens at {shown}:{port} (connection refused): is the server running?",
            retryable=False,
        )
    return provider_error(ErrorCode.CONNECTION, said if said is not None else _with_cause(exc))


def connection_refused(exc: BaseException) -> bool:
    """Whether ``exc``, its causes or the exceptions grouped in them include a refused
    connection (``ECONNREFUSED``)."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or (
            isinstance(current, OSError) and current.errno == errno.ECONNREFUSED
        ):
            return True
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return False


def connect_failure(exc: BaseException) -> str:
    """Why a connection could not be made, in a few words: ``connection refused`` when the
    host said nothing listens on the port, else the error's own text."""
    if connection_refused(exc):
        return "connection refused"
    return str(exc) or type(exc).__name__


def _request_address(exc: BaseException) -> tuple[str, int] | None:
    """The host and port of the request ``exc`` failed (an SDK's connection error and an HTTP
    library's carry it), or None when it does not say."""
    try:
        request = getattr(exc, "request", None)
    except RuntimeError:  # httpx's property raises it when the error carries no request
        return None
    url = getattr(request, "url", None)
    host, port = getattr(url, "host", None), getattr(url, "port", None)
    if not isinstance(host, str) or not host:
        return None
    if not isinstance(port, int):
        port = 443 if getattr(url, "scheme", None) == "https" else 80
    return host, port


def _loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback interface."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _wait(exc: BaseException) -> float | None:
    """The ``Retry-After`` wait of an SDK status error's HTTP response."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    return retry_after_seconds(headers) if isinstance(headers, Mapping) else None


def _error_object(body: object) -> Mapping[str, object]:
    if isinstance(body, Mapping):
        inner = body.get("error")
        return inner if isinstance(inner, Mapping) else body
    return {}


def _body_message(error: Mapping[str, object]) -> str | None:
    message = error.get("message")
    return message if isinstance(message, str) and message else None


def _with_cause(exc: BaseException) -> str:
    cause = exc.__cause__
    return f"{exc} ({type(cause).__name__}: {cause})" if cause is not None else str(exc)
