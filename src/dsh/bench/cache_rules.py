"""Provider prompt-cache rules and prices for the bench (bench.md, "Cache simulator").

A request is a sequence of segments ``(key, tokens)`` in the provider's order — tools, system,
then one segment per message (``dsh.llm.cache_sim.request_segments``); two segments with the same
key are byte-identical. Each rule is one class that, request by request, says how many leading
tokens are read from cache and how many are written to it:

* ``deepseek`` — ``DeepSeekCache`` (``dsh.llm.cache_sim``): prefix units are saved at the end of
  each request and each model output; a request hits the longest saved unit that is a full prefix
  of it.
* ``openai`` — automatic for prompts of at least 1024 tokens: the hit is the longest common
  prefix with any earlier request, rounded down to a multiple of 128 (so 0 below 1024).
* ``anthropic`` — explicit breakpoints (at most 4; dsh marks the system block and the last
  message, ``dsh.llm.anthropic``). A request reads the longest cached entry found at one of its
  breakpoints or up to 20 blocks before one; it writes entries at its breakpoints of at least
  1024 tokens; written tokens bill 1.25×, read tokens 0.1×.

Segments are whole messages: a message that differs in its last byte misses from its first (a
slight under-estimate of token-level providers). Rules hold only in-process state, start cold,
and never expire entries (real caches evict after minutes of inactivity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import msgspec

from dsh.errors import ConfigError
from dsh.llm.cache_sim import DeepSeekCache, Segment

RuleName = Literal["deepseek", "openai", "anthropic"]
RULES: tuple[RuleName, ...] = ("deepseek", "openai", "anthropic")

OPENAI_MIN_TOKENS = 1024
OPENAI_INCREMENT = 128
ANTHROPIC_MIN_TOKENS = 1024
ANTHROPIC_MAX_BREAKPOINTS = 4
ANTHROPIC_LOOKBACK_BLOCKS = 20


@dataclass(frozen=True, slots=True)
class Served:
    """What the cache did for one request (tokens)."""

    read: int = 0
    write: int = 0


class CacheSimulator(Protocol):
    """One provider rule: ``request`` when a request is sent, ``response`` when its reply ends."""

    name: str

    def request(self, segments: Sequence[Segment], breakpoints: Sequence[int] = ()) -> Served: ...

    def response(self, segments: Sequence[Segment]) -> None:
        """``segments``: the request followed by the reply's segment."""
        ...


# ---- DeepSeek --------------------------------------------------------------------------------


class DeepSeekRule:
    """``DeepSeekCache`` behind the bench protocol (DeepSeek bills no cache writes)."""

    name = "deepseek"

    def __init__(self) -> None:
        self.cache = DeepSeekCache()

    def request(self, segments: Sequence[Segment], breakpoints: Sequence[int] = ()) -> Served:
        return Served(read=self.cache.serve(segments))

    def response(self, segments: Sequence[Segment]) -> None:
        self.cache.save_output(segments)


# ---- a prefix trie ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    entry: bool = False
    """A cache entry ends here (Anthropic)."""


def _walk(root: _Node, segments: Sequence[Segment]) -> list[_Node]:
    """The trie nodes matched by the leading segments, in order (stops at the first miss)."""
    path = []
    node = root
    for key, _ in segments:
        child = node.children.get(key)
        if child is None:
            break
        path.append(child)
        node = child
    return path


def _insert(root: _Node, segments: Sequence[Segment]) -> list[_Node]:
    path = []
    node = root
    for key, _ in segments:
        node = node.children.setdefault(key, _Node())
        path.append(node)
    return path


def _prefix_tokens(segments: Sequence[Segment]) -> list[int]:
    """``out[i]``: tokens of segments ``0..i``."""
    out, total = [], 0
    for _, tokens in segments:
        total += tokens
        out.append(total)
    return out


# ---- OpenAI ----------------------------------------------------------------------------------


class OpenAIRule:
    """Automatic prefix caching: ``floor(LCP / 128) × 128`` for prompts of ≥ 1024 tokens."""

    name = "openai"

    def __init__(self) -> None:
        self._root = _Node()

    def request(self, segments: Sequence[Segment], breakpoints: Sequence[int] = ()) -> Served:
        sums = _prefix_tokens(segments)
        total = sums[-1] if sums else 0
        if total < OPENAI_MIN_TOKENS:
            return Served()
        matched = len(_walk(self._root, segments))
        lcp = sums[matched - 1] if matched else 0
        _insert(self._root, segments)
        hit = (lcp // OPENAI_INCREMENT) * OPENAI_INCREMENT
        return Served(read=hit if hit >= OPENAI_MIN_TOKENS else 0)

    def response(self, segments: Sequence[Segment]) -> None:
        """Only prompts are cached; the reply comes back as part of the next prompt."""


# ---- Anthropic -------------------------------------------------------------------------------


class AnthropicRule:
    """Explicit breakpoints: read the longest entry at or up to 20 blocks before a breakpoint;
    write an entry at every breakpoint of ≥ 1024 tokens (billed from the read point to the last
    breakpoint)."""

    name = "anthropic"

    def __init__(self) -> None:
        self._root = _Node()

    def request(self, segments: Sequence[Segment], breakpoints: Sequence[int] = ()) -> Served:
        points = sorted({b for b in breakpoints if 0 <= b < len(segments)})
        if len(points) > ANTHROPIC_MAX_BREAKPOINTS:
            raise ValueError(f"{len(points)} breakpoints; Anthropic allows at most 4")
        if not points:
            return Served()
        sums = _prefix_tokens(segments)
        matched = _walk(self._root, segments)
        read = 0
        for point in points:
            first = min(point, len(matched) - 1)
            last = max(point - ANTHROPIC_LOOKBACK_BLOCKS, 0)
            for block in range(first, last - 1, -1):
                if matched[block].entry:
                    read = max(read, sums[block])
                    break
        cached_points = [p for p in points if sums[p] >= ANTHROPIC_MIN_TOKENS]
        if not cached_points:
            return Served(read=read)
        path = _insert(self._root, segments[: cached_points[-1] + 1])
        for point in cached_points:
            path[point].entry = True
        return Served(read=read, write=max(0, sums[cached_points[-1]] - read))

    def response(self, segments: Sequence[Segment]) -> None:
        """Replies are cached only as part of a later request's prefix."""


def make_rule(name: str) -> CacheSimulator:
    if name == "deepseek":
        return DeepSeekRule()
    if name == "openai":
        return OpenAIRule()
    if name == "anthropic":
        return AnthropicRule()
    raise ConfigError(f"unknown cache rule {name!r}; known rules: {', '.join(RULES)}")


# ---- prices ----------------------------------------------------------------------------------


class Price(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """US$ per million tokens: uncached input and output, and multipliers of the input price
    for cache reads and cache writes."""

    model: str
    input: float
    output: float
    cache_read: float
    cache_write: float = 1.0

    def cost(self, *, input_tokens: int, read: int, write: int, output_tokens: int) -> float:
        """Billed US$ for one call: ``input_tokens`` is the whole request (read and write
        included)."""
        uncached = input_tokens - read - write
        units = uncached + read * self.cache_read + write * self.cache_write
        return (units * self.input + output_tokens * self.output) / 1e6


DEFAULT_PRICES: dict[str, Price] = {
    # deepseek-chat (V3.2) list prices: $0.28 miss, $0.028 hit, $0.42 output.
    "deepseek": Price(model="deepseek-chat", input=0.28, output=0.42, cache_read=0.1),
    # gpt-4.1: $2.00 input, $0.50 cached, $8.00 output.
    "openai": Price(model="gpt-4.1", input=2.0, output=8.0, cache_read=0.25),
    # claude-sonnet-4.5: $3 input, $15 output; 5-minute cache write 1.25×, read 0.1×.
    "anthropic": Price(
        model="claude-sonnet-4-5", input=3.0, output=15.0, cache_read=0.1, cache_write=1.25
    ),
}


def load_prices(overrides: Mapping[str, Any] | None = None) -> dict[str, Price]:
    """The default price table with ``overrides`` (``{rule: {field: value}}``) applied."""
    prices = dict(DEFAULT_PRICES)
    for rule, values in (overrides or {}).items():
        if rule not in RULES:
            raise ConfigError(
                f"prices: unknown cache rule {rule!r}; known rules: {', '.join(RULES)}"
            )
        if not isinstance(values, Mapping):
            raise ConfigError(f"prices.{rule} must be a table of fields")
        merged = {**msgspec.structs.asdict(prices[rule]), **values}
        try:
            prices[rule] = msgspec.convert(merged, Price)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"prices.{rule}: {exc}") from exc
    return prices
