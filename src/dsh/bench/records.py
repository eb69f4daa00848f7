"""What a bench run records as it goes: one ``PassRecord`` per landed pass, one ``Crossing``
per pre-step that found the context over the threshold (or ran a pass). They are part of the run
record (``dsh.bench.results.RunResult``) and keep their snake_case field names in JSON."""

from __future__ import annotations

import msgspec


class PassRecord(msgspec.Struct, kw_only=True, frozen=True):
    number: int
    step: int
    """Conversation requests sent before the pass."""
    turn: int | None
    tokens_before: int
    tokens_after: int
    regions: int
    stubs: int
    summariser_calls: int
    wall_s: float
    region_growth: int
    """Regions whose checkpoint is larger than what it shadows (the pass as a whole shrank)."""


class Crossing(msgspec.Struct, frozen=True):
    step: int
    tokens: int
    threshold: int
    passes: int
    after: int
