"""Simulated provider prompt caches (bench.md, "Cache simulator"): one class per provider rule.

A request is seen as a sequence of segments ``(canonical text, tokens)`` in the provider's order:
tools, system, then each message. A rule decides how many leading tokens of a request are
served from cache. Rules are pure and deterministic so bench figures can be recomputed; they
hold only in-process state (a resumed session starts with a cold simulated cache).

To add a rule (OpenAI, Anthropic…), write a class with ``serve`` and ``save_output`` and
register it in ``CACHE_RULES``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import Protocol

import msgspec

from dsh.errors import ConfigError
from dsh.events import Message, encode_json
from dsh.llm.types import ModelRequest
from dsh.surface.tokens import message_tokens, system_tokens, tools_tokens

Segment = tuple[str, int]
"""One unit of a request: its canonical text and its heuristic token count."""


class CacheRule(Protocol):
    """A provider's prompt-cache behaviour."""

    def serve(self, segments: Sequence[Segment]) -> int:
        """Serve one request; returns the number of its tokens read from cache."""
        ...

    def save_output(self, segments: Sequence[Segment]) -> None:
        """Record a finished reply; ``segments`` is the request followed by the reply."""
        ...


# ---- serialising a request ------------------------------------------------------------------


class _WireMessage(msgspec.Struct, frozen=True):
    """What a provider sees of a message: role and content (ids and sources stay local)."""

    role: str
    content: tuple[object, ...]


_encoder = msgspec.json.Encoder()


def message_segment(message: Message) -> Segment:
    """The canonical segment of one message.

    Only role and content are serialised: the message id and source never reach a provider,
    so a reply assembled from a stream (under any id) matches the logged message later.
    """
    wire = _WireMessage(role=message.role, content=message.content)
    return "message:" + _encoder.encode(wire).decode(), message_tokens(message)


def request_segments(request: ModelRequest) -> list[Segment]:
    """The request in provider order (tools, system, messages) with heuristic token counts
    (docs/architecture.md, "Token accounting")."""
    segments: list[Segment] = []
    if request.tools:
        segments.append(
            ("tools:" + encode_json(list(request.tools)).decode(), tools_tokens(request.tools))
        )
    if request.system is not None:
        segments.append(("system:" + request.system, system_tokens(request.system)))
    segments.extend(message_segment(m) for m in request.messages)
    return segments


def digested(segments: Sequence[Segment]) -> list[Segment]:
    """``segments`` with each text replaced by its 128-bit BLAKE2b digest: two segments match
    exactly when their texts do (short of a collision, about 2^-128 a pair), so a rule serves
    the same hits, and a cache kept for a long run holds 32 characters a segment instead of
    every message's text (``ScriptedProvider``'s)."""
    return [(blake2b(text.encode(), digest_size=16).hexdigest(), n) for text, n in segments]


# ---- DeepSeek ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    saved: bool = False


class DeepSeekCache:
    """DeepSeek's context cache: prefix units are saved at the end of each user input and each
    model output; a request hits the longest saved unit that is a full prefix of it.

    With A+B saved, A+B+C hits A+B's tokens; A+C hits A's tokens only if A alone was saved.
    Saved prefixes live in a trie keyed by segment text.
    """

    def __init__(self) -> None:
        self._root = _Node()

    def serve(self, segments: Sequence[Segment]) -> int:
        """Hit tokens of this request; then its full prefix (the user input) is saved."""
        hit = self._longest_saved_prefix(segments)
        self._save(segments)
        return hit

    def save_output(self, segments: Sequence[Segment]) -> None:
        """Save the prefix that ends after the model's reply."""
        self._save(segments)

    def _longest_saved_prefix(self, segments: Sequence[Segment]) -> int:
        node, tokens, hit = self._root, 0, 0
        for text, count in segments:
            child = node.children.get(text)
            if child is None:
                break
            node, tokens = child, tokens + count
            if node.saved:
                hit = tokens
        return hit

    def _save(self, segments: Sequence[Segment]) -> None:
        if not segments:
            return
        node = self._root
        for text, _ in segments:
            node = node.children.setdefault(text, _Node())
        node.saved = True


CACHE_RULES: dict[str, Callable[[], CacheRule]] = {"deepseek": DeepSeekCache}
"""Cache rules by name, as configured (``cache="deepseek"``)."""


def make_cache(rule: str) -> CacheRule:
    """A fresh (cold) simulated cache following ``rule``."""
    factory = CACHE_RULES.get(rule)
    if factory is None:
        raise ConfigError(f"unknown cache rule {rule!r}; known rules: {', '.join(CACHE_RULES)}")
    return factory()
