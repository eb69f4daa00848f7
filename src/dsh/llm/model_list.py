"""The models a route's server offers, for ``/model``: ``GET {base}/models`` of an
OpenAI-compatible server (DeepSeek, OpenAI, llama.cpp, vLLM, Ollama) and Anthropic's models
list, asked through the adapter's own SDK client, so with the route's key and
``provider.headers`` and nothing else (``dsh.llm.sdk_client``: the client is made in a thread
of its own; the key stays in it).

One question, bounded: ``LIST_TIMEOUT`` seconds for the whole list (every page of it), at most
``MAX_MODELS`` ids. What it answers is ``Listed`` (the ids in the server's order), ``NotListed``
with why in a few words of dsh's own (no server text, which might echo a key), or None for a
provider that has no server to ask (the scripted and replayed models, a test's double): they
answer whatever model is named."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from dsh.llm.sdk_client import ClientOnFirstUse, in_a_thread

LIST_TIMEOUT = 5.0
"""Seconds the list may take, connection and every page included."""
MAX_MODELS = 2000
ANTHROPIC_PAGE = 1000
"""The page size asked of Anthropic's list (its default is 20)."""


@dataclass(frozen=True, slots=True)
class Listed:
    models: tuple[str, ...]
    """The model ids the server lists, in its order (duplicates dropped)."""


@dataclass(frozen=True, slots=True)
class NotListed:
    reason: str
    """Why the list could not be had: ``the server answered 404``, ``no answer within 5 s``…"""


ModelList = Listed | NotListed | None


def lists_models(provider: object) -> bool:
    """Whether ``provider`` has a server to ask for its models (``list_models`` answers None
    at once for one that has not)."""
    return isinstance(provider, ClientOnFirstUse)


async def list_models(provider: object, *, timeout: float | None = None) -> ModelList:
    """The models ``provider``'s server lists (None: a provider with no server to ask), asked
    for at most ``timeout`` seconds (default ``LIST_TIMEOUT``). Never raises for what the
    server does; a cancel of the awaiting task stops the question."""
    timeout = LIST_TIMEOUT if timeout is None else timeout
    if not lists_models(provider):
        return None
    assert isinstance(provider, ClientOnFirstUse)
    try:
        made = await in_a_thread(provider.sdk_client, name="dsh-model-list")
    except Exception:
        return NotListed("its client could not be made (see the base URL)")
    if made is None:
        return NotListed("its base URL takes no request")
    client, request_headers = made
    try:
        return Listed(await asyncio.wait_for(_ids(client, request_headers, timeout), timeout))
    except TimeoutError:
        return NotListed(f"no answer within {timeout:g} s")
    except Exception as exc:
        return NotListed(_why(exc))


async def _ids(client: Any, request_headers: dict[str, Any], timeout: float) -> tuple[str, ...]:
    options: dict[str, Any] = {"extra_headers": request_headers, "timeout": timeout}
    if type(client).__module__.startswith("anthropic"):
        options["limit"] = ANTHROPIC_PAGE
    seen: dict[str, None] = {}
    async for model in client.models.list(**options):
        name = getattr(model, "id", None)
        if isinstance(name, str) and name and name.isprintable():
            seen[name] = None
            if len(seen) >= MAX_MODELS:
                break
    return tuple(seen)


def _why(exc: Exception) -> str:
    """Why the list failed, in dsh's words (the exception's own text is never shown)."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return f"the server answered {status}"
    name = type(exc).__name__
    if "Timeout" in name:
        return "no answer in time"
    if "Connection" in name:
        return "could not connect to the server"
    return "its answer was not a list of models"
