"""Provider prompt-cache rules and prices for the bench (docs/bench.md, "Cache simulator").

A request is a sequence of segments ``(key, tokens)`` in the provider's order; two segments with
the same key are byte-identical. DeepSeek and OpenAI see one segment per message (tools, system,
then each message); Anthropic sees one segment per content block as ``dsh.llm.anthropic`` sends
them (``view = "blocks"``). Each rule's decision is a small pure function pinned by the
provider's documented examples; a class per rule keeps the state (a prefix trie) across requests:

* ``deepseek`` — the documented KV-cache rule: prefix units are persisted (a) at the end of each
  request's input and of each model output, (b) at a prefix common to an earlier request, and
  (c) every ``interval`` tokens (undocumented: configurable); storage is in 64-token units. A
  request hits the longest persisted unit that is a full prefix of it (``deepseek_units``).
* ``deepseek-strict`` — rule (a) alone, no 64-token rounding (``dsh.llm.cache_sim``).
* ``openai`` — automatic for prompts of at least 1024 tokens: the longest common prefix with an
  earlier request, rounded down to 128 (``openai_hit``); optionally a prefix unused for N
  simulated minutes is evicted.
* ``anthropic`` — explicit breakpoints (at most 4; dsh marks the system block, the end of the
  frozen stub region and the last block of the last message). A breakpoint reads the longest
  live entry at it or up to 20 blocks before it (``anthropic_read``); entries are written at
  breakpoints of at least 1024 tokens (1.25×), read at 0.1×, and live 5 minutes from their last
  write or read.

Segments are whole messages (blocks for Anthropic): a segment that differs in its last byte
misses from its first (a slight under-estimate of token-level providers).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import msgspec

from dsh.errors import ConfigError
from dsh.llm.cache_sim import DeepSeekCache, Segment
from dsh.llm.prices import DEFAULT_PRICES, Price

RuleName = Literal["deepseek", "deepseek-strict", "openai", "anthropic"]
RULES: tuple[RuleName, ...] = ("deepseek", "deepseek-strict", "openai", "anthropic")
View = Literal["messages", "blocks"]

DEEPSEEK_UNIT = 64
OPENAI_MIN_TOKENS = 1024
OPENAI_INCREMENT = 128
ANTHROPIC_MIN_TOKENS = 1024
ANTHROPIC_MAX_BREAKPOINTS = 4
ANTHROPIC_LOOKBACK_BLOCKS = 20
ANTHROPIC_TTL_S = 300.0


@dataclass(frozen=True, slots=True)
class Served:
    """What the cache did for one request (tokens)."""

    read: int = 0
    write: int = 0


class CacheSimulator(Protocol):
    """One provider rule: ``request`` when a request is sent, ``response`` when its reply ends;
    ``now`` is simulated seconds since the session started."""

    name: str
    view: View

    def request(
        self, segments: Sequence[Segment], breakpoints: Sequence[int] = (), now: float = 0.0
    ) -> Served: ...

    def response(self, segments: Sequence[Segment], now: float = 0.0) -> None:
        """``segments``: the request followed by the reply's segment."""
        ...


# ---- the pure rules --------------------------------------------------------------------------


def deepseek_units(
    total: int, common: int, *, interval: int | None, unit: int = DEEPSEEK_UNIT
) -> list[int]:
    """Prefix lengths persisted after a request of ``total`` tokens whose longest common prefix
    with earlier traffic is ``common``: (a) the whole input, (b) the common prefix, (c) every
    ``interval`` tokens; each rounded down to whole ``unit``s (a unit under 64 is not stored)."""
    lengths = {total}
    if 0 < common < total:
        lengths.add(common)
    if interval:
        lengths.update(range(interval, total, interval))
    return sorted({n // unit * unit for n in lengths} - {0})


def openai_hit(common: int, total: int) -> int:
    """Cached tokens of an OpenAI prompt of ``total`` tokens sharing ``common`` leading tokens
    with an earlier prompt: 0 under 1024, else ``common`` rounded down to 128 (0 under 1024)."""
    if total < OPENAI_MIN_TOKENS:
        return 0
    hit = common // OPENAI_INCREMENT * OPENAI_INCREMENT
    return hit if hit >= OPENAI_MIN_TOKENS else 0


def anthropic_read(
    live: Sequence[bool], sums: Sequence[int], points: Sequence[int]
) -> tuple[int, int | None]:
    """(tokens read, block index read) for breakpoints ``points``: each looks at itself and up
    to 20 blocks before it for a live entry; ``live[i]``: block ``i`` of the request matches the
    cache and a live entry ends there (``live`` stops at the first block that does not match)."""
    read, at = 0, None
    for point in points:
        first = min(point, len(live) - 1)
        for block in range(first, max(point - ANTHROPIC_LOOKBACK_BLOCKS, 0) - 1, -1):
            if live[block]:
                if sums[block] > read:
                    read, at = sums[block], block
                break
    return read, at


# ---- a prefix trie ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    saved: int = 0
    """DeepSeek: the longest persisted unit that needs this node matched (tokens)."""
    expires: float = -1.0
    """Anthropic: an entry ends here and lives until then (simulated seconds)."""
    used: float = 0.0
    """OpenAI: last time a prompt went through this node."""


def _walk(root: _Node, segments: Sequence[Segment], alive: float | None = None) -> list[_Node]:
    """The trie nodes matched by the leading segments (stops at the first miss, or at the first
    node last used before ``alive``)."""
    path = []
    node = root
    for key, _ in segments:
        child = node.children.get(key)
        if child is None or (alive is not None and child.used < alive):
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


# ---- DeepSeek --------------------------------------------------------------------------------


class DeepSeekRule:
    """The documented rule; ``interval`` None turns rule (c) off."""

    name = "deepseek"
    view: View = "messages"

    def __init__(self, interval: int | None = 4096) -> None:
        self.interval = interval
        self._root = _Node()

    def request(
        self, segments: Sequence[Segment], breakpoints: Sequence[int] = (), now: float = 0.0
    ) -> Served:
        sums = _prefix_tokens(segments)
        matched = _walk(self._root, segments)
        hit = max((node.saved for node in matched), default=0)
        common = sums[len(matched) - 1] if matched else 0
        self._persist(segments, sums, common)
        return Served(read=hit)

    def response(self, segments: Sequence[Segment], now: float = 0.0) -> None:
        self._persist(segments, _prefix_tokens(segments), 0)

    def _persist(self, segments: Sequence[Segment], sums: list[int], common: int) -> None:
        if not segments:
            return
        path = _insert(self._root, segments)
        for length in deepseek_units(sums[-1], common, interval=self.interval):
            node = path[bisect.bisect_left(sums, length)]  # the segment holding the unit's end
            node.saved = max(node.saved, length)


class DeepSeekStrictRule:
    """``DeepSeekCache`` behind the bench protocol: rule (a) only (DeepSeek bills no writes)."""

    name = "deepseek-strict"
    view: View = "messages"

    def __init__(self) -> None:
        self.cache = DeepSeekCache()

    def request(
        self, segments: Sequence[Segment], breakpoints: Sequence[int] = (), now: float = 0.0
    ) -> Served:
        return Served(read=self.cache.serve(segments))

    def response(self, segments: Sequence[Segment], now: float = 0.0) -> None:
        self.cache.save_output(segments)


# ---- OpenAI ----------------------------------------------------------------------------------


class OpenAIRule:
    """Automatic prefix caching over earlier prompts (replies are cached only as part of a
    later prompt); ``evict_minutes`` drops prefixes unused for that long."""

    name = "openai"
    view: View = "messages"

    def __init__(self, evict_minutes: float | None = None) -> None:
        self.evict_s = None if evict_minutes is None else evict_minutes * 60
        self._root = _Node()

    def request(
        self, segments: Sequence[Segment], breakpoints: Sequence[int] = (), now: float = 0.0
    ) -> Served:
        sums = _prefix_tokens(segments)
        total = sums[-1] if sums else 0
        if total < OPENAI_MIN_TOKENS:
            return Served()
        alive = None if self.evict_s is None else now - self.evict_s
        matched = len(_walk(self._root, segments, alive))
        for node in _insert(self._root, segments):
            node.used = now
        return Served(read=openai_hit(sums[matched - 1] if matched else 0, total))

    def response(self, segments: Sequence[Segment], now: float = 0.0) -> None:
        """Only prompts are cached."""


# ---- Anthropic -------------------------------------------------------------------------------


class AnthropicRule:
    """Explicit breakpoints over content blocks, 20-block lookback, 5-minute TTL refreshed on
    read; writes are billed from the read point to the last cacheable breakpoint."""

    name = "anthropic"
    view: View = "blocks"

    def __init__(self, ttl_s: float = ANTHROPIC_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._root = _Node()

    def request(
        self, segments: Sequence[Segment], breakpoints: Sequence[int] = (), now: float = 0.0
    ) -> Served:
        points = sorted({b for b in breakpoints if 0 <= b < len(segments)})
        if len(points) > ANTHROPIC_MAX_BREAKPOINTS:
            raise ValueError(f"{len(points)} breakpoints; Anthropic allows at most 4")
        if not points:
            return Served()
        sums = _prefix_tokens(segments)
        matched = _walk(self._root, segments)
        read, at = anthropic_read([n.expires >= now for n in matched], sums, points)
        if at is not None:
            matched[at].expires = now + self.ttl_s  # a read refreshes the entry
        cached = [p for p in points if sums[p] >= ANTHROPIC_MIN_TOKENS]
        if not cached:
            return Served(read=read)
        path = _insert(self._root, segments[: cached[-1] + 1])
        for point in cached:
            path[point].expires = now + self.ttl_s
        return Served(read=read, write=max(0, sums[cached[-1]] - read))

    def response(self, segments: Sequence[Segment], now: float = 0.0) -> None:
        """Replies are cached only as part of a later request's prefix."""


def make_rule(
    name: str, *, interval: int | None = 4096, evict_minutes: float | None = None
) -> CacheSimulator:
    if name == "deepseek":
        return DeepSeekRule(interval)
    if name == "deepseek-strict":
        return DeepSeekStrictRule()
    if name == "openai":
        return OpenAIRule(evict_minutes)
    if name == "anthropic":
        return AnthropicRule()
    raise ConfigError(f"unknown cache rule {name!r}; known rules: {', '.join(RULES)}")


# ---- prices (the table is dsh.llm.prices, shared with /cost) ---------------------------------


def load_prices(overrides: Mapping[str, Any] | None = None) -> dict[str, Price]:
    """The default price table with ``overrides`` (``{rule: {field: value}}``) applied;
    ``deepseek-strict`` bills at the ``deepseek`` price unless it has its own override."""
    prices = dict(DEFAULT_PRICES)
    overrides = dict(overrides or {})
    for rule in overrides:
        if rule not in RULES:
            raise ConfigError(
                f"prices: unknown cache rule {rule!r}; known rules: {', '.join(RULES)}"
            )
    for rule in RULES:
        base = prices.get(rule) or prices["deepseek"]
        values = overrides.get(rule, {})
        if not isinstance(values, Mapping):
            raise ConfigError(f"prices.{rule} must be a table of fields")
        merged = {**msgspec.structs.asdict(base), **values}
        try:
            prices[rule] = msgspec.convert(merged, Price)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"prices.{rule}: {exc}") from exc
    return prices
