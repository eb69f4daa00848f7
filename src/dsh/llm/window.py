"""Asking an OpenAI-compatible server which models it serves and how large its window is.

``served_models``: the ids ``GET /v1/models`` lists (llama.cpp, vLLM and Ollama all answer it),
for a route that names no model (``dsh.agent.runtime`` adopts a server's one model).

``discover_window``: three servers say their window, each in its own way:

- llama.cpp: ``GET /props`` → ``default_generation_settings.n_ctx`` (the window of one slot);
- vLLM: ``GET /v1/models`` → the model's ``max_model_len``;
- Ollama (its ``/v1/models`` entries are ``owned_by: library``): ``POST /api/show`` →
  ``num_ctx`` in the model's parameters, else ``model_info["<arch>.context_length"]``.

Anything else (an error status, a body without the figure) is "the server does not say". A
server that cannot be connected to at all (refused, no route, a name that does not resolve, no
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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dsh.llm.errors import connect_failure
from dsh.llm.sdk_environment import dsh_user_agent

TIMEOUT = 5.0
"""Seconds one discovery request may take (a busy local server answers /props at once)."""
MAX_BODY = 1_000_000
"""A longer answer is not one of the three the module reads."""


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
class Served:
    """What ``GET /v1/models`` listed (empty: no list, or an unreadable one)."""

    entries: tuple[dict[str, Any], ...]

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


_CACHE: dict[tuple[str, str], Discovered | None] = {}


def discover_window(
    base_url: str,
    model: str,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    served: Served | None = None,
) -> Discovered | Unreachable | None:
    """The window the server at ``base_url`` reports for ``model``, ``Unreachable`` if it
    could not be connected to, or None if it says nothing; each question sends ``api_key``
    and ``headers``. ``served``: its ``/v1/models`` list, already asked (not asked again)."""
    key = (base_url.rstrip("/"), model)
    if key in _CACHE:
        return _CACHE[key]
    try:
        found = _ask(key[0], model, _request_headers(api_key, headers or {}), served)
    except _NotConnected as failure:
        return Unreachable(failure.reason)
    _CACHE[key] = found
    return found


def served_models(
    base_url: str, api_key: str | None = None, headers: Mapping[str, str] | None = None
) -> Served | Unreachable:
    """What the server at ``base_url`` lists at ``/v1/models`` (one question, not cached: a
    route asks it once, when it names no model)."""
    try:
        return _served(base_url.rstrip("/"), _request_headers(api_key, headers or {}))
    except _NotConnected as failure:
        return Unreachable(failure.reason)


def _served(base: str, headers: dict[str, str]) -> Served:
    answer = _get_json(f"{base}/models", headers)
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


def _get_json(url: str, headers: dict[str, str], *, body: Any = None) -> Any:
    """The JSON ``url`` answers, or None (an error status, bad JSON, a body over
    ``MAX_BODY``, a timeout once connected); raises ``_NotConnected`` when no connection could
    be made. httpx, as the provider's own client does, takes a ``user:password@`` in the base
    URL as basic auth."""
    import httpx  # here, not at the top: a route that asks no server must not pay for it

    method, payload = ("GET", None) if body is None else ("POST", body)
    try:
        with (
            httpx.Client(timeout=TIMEOUT) as client,
            client.stream(method, url, headers=headers, json=payload) as response,
        ):
            if response.status_code >= 400:
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
