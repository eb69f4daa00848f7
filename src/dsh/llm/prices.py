"""List prices of the known providers, and what a call costs under them (US$ per million
tokens). The bench bills its simulated calls with them (``dsh.bench.cache_rules.load_prices``
applies a run's overrides); ``/cost`` estimates a session's bill with the same table.
"""

from __future__ import annotations

from typing import Annotated

import msgspec


class Price(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """US$ per million tokens: uncached input and output, and multipliers of the input price
    for cache reads and cache writes."""

    model: str
    input: Annotated[float, msgspec.Meta(ge=0)]
    output: Annotated[float, msgspec.Meta(ge=0)]
    cache_read: Annotated[float, msgspec.Meta(ge=0, le=1)]
    """A cache read is billed at most as an uncached token."""
    cache_write: Annotated[float, msgspec.Meta(ge=0)] = 1.0

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

MODEL_PRICES: dict[str, Price] = {
    # Claude Sonnet 5.5 and Claude Sonnet 5 (their model pages): $2 input, $10 output,
    # 5-minute cache write $2.50 (1.25×), cache read $0.20 (0.1×).
    "claude-sonnet-5-5": Price(
        model="claude-sonnet-5-5", input=2.0, output=10.0, cache_read=0.1, cache_write=1.25
    ),
    "claude-sonnet-5": Price(
        model="claude-sonnet-5", input=2.0, output=10.0, cache_read=0.1, cache_write=1.25
    ),
    "claude-sonnet-4-5": DEFAULT_PRICES["anthropic"],
}
"""List prices of models other than their rule's own (``DEFAULT_PRICES``): ``/cost`` bills a
call to one of them at its price. The bench's Anthropic rule stays ``claude-sonnet-4-5``'s."""
