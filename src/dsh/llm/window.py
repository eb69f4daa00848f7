"""Asking an OpenAI-compatible server which models it serves and how large its window is.

``served_models``: the ids ``GET /v1/models`` lists (llama.cpp, vLLM and Ollama all answer it),
for a route that names no model (``dsh.agent.runtime`` adopts a server's one model).

``discover_window``: three servers say their window, each in its own way:

- llama.cpp: ``GET /props`` → ``default_generation_settings.n_ctx`` (the window of one slot);
- vLLM: ``GET /v1/models`` → the model's ``max_model_len``;
- Ollama (its ``/v1/models`` entries are ``owned_by: library``): ``POST /api/show`` →
  ``num_ctx`` in the model's parameters, else ``model_info["<arch>.context_length"]``.

Anything else (an error status, a body without the figure) is "the server does not say", but
for ``503``: llama-server answers every route so while it loads its model, so a 503 is "not
ready yet", not "no window". The question is asked again after a pause, the pauses doubling
(``FIRST_PAUSE`` to ``MAX_PAUSE``), for ``NOT_READY_WAIT`` seconds in all; ``waiting`` (the
caller's, for a line on stderr) is told once when the first 503 comes. A server still not ready
then is ``NotReady``: the caller stops with one line, it does not assume a window. A server
that cannot be connected to at all (refused, no route, a name that does not resolve, no
connection within ``TIMEOUT``) is ``Unreachable``: nothing more is asked of it, so an
unreachable server costs one connection attempt, not one per endpoint. Each question carries
the route's key and its ``provider.headers`` (a gateway in front of the server wants them on
every request) and says ``User-Agent: dsh/<version>``, as the model calls do, not httpx's own
(a ``User-Agent`` among ``provider.headers`` wins). Windows are cached per process by (base
URL, model): one question per session; an unreachable server is asked again next time (it may
have started since).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from dsh.config import redact
from dsh.llm.errors import connect_failure
from dsh.llm.sdk_environment import dsh_user_agent

TIMEOUT = 5.0
"""Seconds one discovery request may take (a busy local server answers /props at once)."""
MAX_BODY = 1_000_000
"""A longer answer is not one of the three the module reads."""
NOT_READY_WAIT = 60.0
"""Seconds of pauses a server answering 503 (llama-server loading its model) is waited for."""
FIRST_PAUSE = 0.5
MAX_PAUSE = 8.0
NOT_READY = 503

_sleep: Callable[[float], None] = time.sleep
"""How a pause is waited (a test's own counts them instead)."""

_T = TypeVar("_T")

Waiting = Callable[[str], None]
"""Told once, with a line to show, when the server first answers that it is not ready."""


@dataclass(frozen=True, slots=True)
class Discovered:
    window: int
    source: str
    """Which endpoint said it, for the log line: ``llama.cpp /props`` etc."""


@dataclass(frozen=True, slots=True)
class Unreachable:
    """The server could not be connected to at all."""

    reason: str
    """Why, for a message: ``connection refused``, ``no connection within 5 s``, …"""


@dataclass(frozen=True, slots=True)
class NotReady:
    """The server still answered 503 after ``NOT_READY_WAIT`` seconds of waiting."""

    reason: str
    """What it answered: ``the server answered 503 (Loading model)``."""


@dataclass(frozen=True, slots=True)
class Served:
    """What ``GET /v1/models`` listed (empty: no list, or an unreadable one)."""

    entries: tuple[dict[str, Any], ...]
    refused: str | None = None
    """Why there is no list when the server answered an error status: ``the server answered
    502`` (None: it answered one, or something that was not a list)."""

    @property
    def models(self) -> tuple[str, ...]:
        """The listed model ids, in the server's order, each once (a server may list one
        twice: one model, not two)."""
        ids = (e["id"] for e in self.entries if isinstance(e.get("id"), str) and e["id"])
        return tuple(dict.fromkeys(ids))


class _NotConnected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _NotReady(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Refused(Exception):
    """An error status other than 503, for ``_served`` to say (the others read it as None)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


_CACHE: dict[tuple[str, str], Discovered | None] = {}


def discover_window(
    base_url: str,
    model: str,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    served: Served | None = None,
    waiting: Waiting | None = None,
) -> Discovered | Unreachable | NotReady | None:
    """The window the server at ``base_url`` reports for ``model``, ``Unreachable`` if it
    could not be connected to, ``NotReady`` if it answered 503 throughout the wait (module
    docstring; ``waiting`` is told when it starts), or None if it says nothing; each question
    sends ``api_key`` and ``headers``. ``served``: its ``/v1/models`` list, already asked (not
    asked again)."""
    key = (base_url.rstrip("/"), model)
    if key in _CACHE:
        return _CACHE[key]
    sent = _request_headers(api_key, headers or {})
    try:
        found = _patiently(key[0], lambda: _ask(key[0], model, sent, served), waiting)
    except _NotConnected as failure:
        return Unreachable(failure.reason)
    except _NotReady as failure:
        return NotReady(failure.reason)
    _CACHE[key] = found
    return found


def served_models(
    base_url: str,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    waiting: Waiting | None = None,
) -> Served | Unreachable | NotReady:
    """What the server at ``base_url`` lists at ``/v1/models`` (one question, not cached: a
    route asks it once, when it names no model), waited for as the window is while it answers
    503."""
    base, sent = base_url.rstrip("/"), _request_headers(api_key, headers or {})
    try:
        return _patiently(base, lambda: _served(base, sent), waiting)
    except _NotConnected as failure:
        return Unreachable(failure.reason)
    except _NotReady as failure:
        return NotReady(failure.reason)


def _patiently(base: str, ask: Callable[[], _T], waiting: Waiting | None) -> _T:
    """``ask()``, asked again after a pause while the server answers 503, for at most
    ``NOT_READY_WAIT`` seconds of pauses; then its ``_NotReady`` is raised."""
    waited, pause = 0.0, FIRST_PAUSE
    while True:
        try:
            return ask()
        except _NotReady as busy:
            if waited >= NOT_READY_WAIT:
                raise
            if waited == 0 and waiting is not None:
                waiting(
                    f"{redact(base)}: {busy.reason}; waiting up to {NOT_READY_WAIT:g} s for the "
                    "server to load its model…"
                )
            step = min(pause, NOT_READY_WAIT - waited)
            _sleep(step)
            waited, pause = waited + step, min(pause * 2, MAX_PAUSE)


def _served(base: str, headers: dict[str, str]) -> Served:
    try:
        answer = _get_json(f"{base}/models", headers, refuse=True)
    except _Refused as refused:
        return Served((), f"the server answered {refused.status}")
    entries = answer.get("data") if isinstance(answer, dict) else None
    listed = entries if isinstance(entries, list) else []
    return Served(tuple(e for e in listed if isinstance(e, dict)))


def _request_headers(api_key: str | None, extra: Mapping[str, str]) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": dsh_user_agent(), **extra}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def _ask(
    base: str, model: str, headers: dict[str, str], served: Served | None
) -> Discovered | None:
    root = base.removesuffix("/v1")
    props = _get_json(f"{root}/props", headers)
    n_ctx = _positive(_dig(props, "default_generation_settings", "n_ctx"))
    if n_ctx is not None:
        return Discovered(n_ctx, "llama.cpp /props")
    listed = served if served is not None else _served(base, headers)
    entry = _entry_for(list(listed.entries), model)
    if entry is None:
        return None
    max_len = _positive(entry.get("max_model_len"))
    if max_len is not None:
        return Discovered(max_len, "vLLM /v1/models")
    if entry.get("owned_by") == "library":
        return _ask_ollama(root, model, headers)
    return None


def _ask_ollama(root: str, model: str, headers: dict[str, str]) -> Discovered | None:
    shown = _get_json(f"{root}/api/show", headers, body={"model": model})
    if not isinstance(shown, dict):
        return None
    for line in str(shown.get("parameters") or "").splitlines():
        name, _, value = line.strip().partition(" ")
        num_ctx = _positive(_int(value.strip())) if name == "num_ctx" else None
        if num_ctx is not None:
            return Discovered(num_ctx, "Ollama /api/show num_ctx")
    info = shown.get("model_info")
    if isinstance(info, dict):
        for name, value in info.items():
            if str(name).endswith(".context_length") and _positive(value) is not None:
                return Discovered(int(value), "Ollama /api/show context_length")
    return None


def _entry_for(entries: list[Any], model: str) -> dict[str, Any] | None:
    dicts = [e for e in entries if isinstance(e, dict)]
    named = [e for e in dicts if e.get("id") == model]
    if named:
        return named[0]
    return dicts[0] if len(dicts) == 1 else None  # a one-model server serves any name


def _get_json(url: str, headers: dict[str, str], *, body: Any = None, refuse: bool = False) -> Any:
    """The JSON ``url`` answers, or None (an error status, bad JSON, a body over
    ``MAX_BODY``, a timeout once connected); raises ``_NotConnected`` when no connection could
    be made, ``_NotReady`` for a 503 and, with ``refuse``, ``_Refused`` for another error
    status. httpx, as the provider's own client does, takes a ``user:password@`` in the base
    URL as basic auth."""
    import httpx  # here, not at the top: a route that asks no server must not pay for it

    method, payload = ("GET", None) if body is None else ("POST", body)
    try:
        with (
            httpx.Client(timeout=TIMEOUT) as client,
            client.stream(method, url, headers=headers, json=payload) as response,
        ):
            if response.status_code == NOT_READY:
                raise _NotReady(_not_ready(response))
            if response.status_code >= 400:
                if refuse:
                    raise _Refused(response.status_code)
                return None
            data = bytearray()
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > MAX_BODY:
                    return None
            return json.loads(bytes(data))
    except httpx.ConnectTimeout:
        raise _NotConnected(f"no connection within {TIMEOUT:g} s") from None
    except httpx.ConnectError as error:
        raise _NotConnected(connect_failure(error)) from None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError):  # timeouts, a dropped answer, bad JSON
        return None


def _not_ready(response: Any) -> str:
    """``the server answered 503``, with the ``error.message`` of its JSON body when it is a
    short line (llama-server's ``Loading model``)."""
    data = bytearray()
    for chunk in response.iter_bytes():
        data += chunk
        if len(data) > MAX_NOT_READY_BODY:
            return f"the server answered {NOT_READY}"
    try:
        said = _dig(json.loads(bytes(data)), "error", "message")
    except ValueError:
        said = None
    if isinstance(said, str) and said.isprintable() and 0 < len(said) <= MAX_SAID:
        return f"the server answered {NOT_READY} ({said})"
    return f"the server answered {NOT_READY}"


MAX_NOT_READY_BODY = 4096
MAX_SAID = 60
"""The longest 503 message a line repeats (a page of HTML is not said)."""


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value
