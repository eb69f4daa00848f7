"""The typed records of a bench run: what ``dsh.bench.score`` produces and the report reads.

One ``RunResult`` per finished (scenario, arm, seed) run; a ``FailedRun`` when the run could not
be set up or its worker died. Both encode (``msgspec.to_builtins``) to exactly the ``runs[]``
items of ``results.json`` and the ``runs/*.json`` files: camelCase keys, except the pass and
crossing records (``dsh.bench.records``), which keep their snake_case field names. Every record
is a frozen, keyword-only struct.

Their JSON form is the wire format: ``run_scenario`` and a worker process hand a run back as
that plain dict (``as_json``), and ``runs/*.json`` files (including hand-made ones in tests) are
plain JSON. ``as_record`` reads a dict back into its typed record; inside the bench only records
are read, never a run's dict by key. The few defaulted fields (``whatIf``, ``sensitivity``,
``reachable.current``/``currentN``, ``summariserReadTokens``) are the ones the report already
tolerated missing in older run directories.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import msgspec

from dsh.bench.records import Crossing, PassRecord

SettingValue: TypeAlias = str | int | float | bool | None
"""A ``[compaction]`` setting as the run used it (``settings`` echoes the config)."""


# ---- counts and cache ------------------------------------------------------------------------


class Layout(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """Nodes of the final surface by kind."""

    index: int
    state: int
    tail: int


class Counts(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    events: int
    turns: int
    requests: int
    summariser_calls: int
    final_layout: Layout


class FirstRequest(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """The first conversation request after one or more passes."""

    passes: list[int]
    step: int
    hit_ratio: float


class FirstAfterPass(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    requests: int
    input_tokens: int
    read_tokens: int
    hit_ratio: float | None
    per_request: list[FirstRequest]


class CacheFigures(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """One cache rule replayed over the run (``dsh.bench.scorers.cache_figures``)."""

    hit_ratio: float
    conversation_hit_ratio: float
    input_tokens: int
    read_tokens: int
    write_tokens: int
    output_tokens: int
    cost: float
    conversation_cost: float
    summariser_cost: float
    summariser_input_tokens: int
    summariser_read_tokens: int = 0
    first_after_pass: FirstAfterPass
    cumulative: list[float]


class StubBreakpointWhatIf(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    hit_ratio: float
    input_tokens: int
    read_tokens: int
    cost: float
    first_after_pass: FirstAfterPass


class WhatIf(msgspec.Struct, rename="camel", kw_only=True, frozen=True, omit_defaults=True):
    anthropic_without_stub_breakpoint: StubBreakpointWhatIf | None = None
    """The anthropic rule without the breakpoint after the last index stub: the two
    breakpoints (system block, last block) dsh sent before it marked the stub region."""
    anthropic_stub_breakpoint: StubBreakpointWhatIf | None = None
    """Older run directories: a third breakpoint after the last stub, when the simulated rule
    marked only two (the report no longer shows it)."""


class IntervalFigures(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """The DeepSeek rule under one fixed interval."""

    hit_ratio: float
    input_tokens: int
    read_tokens: int
    cost: float
    first_after_pass_hit_ratio: float | None


class Sensitivity(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    deepseek_interval: dict[str, IntervalFigures]


# ---- facts -----------------------------------------------------------------------------------


class CurrentSurvival(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    n: int
    share: float
    present: dict[str, bool]


class SupersededSurvival(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    n: int
    share: float
    where: dict[str, str | None]
    """Old value -> where it still shows in the final request (``scorers.where_shown``)."""
    as_current: int
    as_current_share: float


class Survival(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    share: float
    present: dict[str, bool]
    current: CurrentSurvival
    superseded: SupersededSurvival


class Reachable(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    share: float
    anchors: list[str]
    current: int = 0
    current_n: int = 0


class RecallFigures(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """One query kind (``recall_scores.RecallScore``)."""

    n: int
    hit1: float
    hit5: float
    mrr: float
    ranks: dict[str, int | None]


class Cued(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    n: int
    share: float
    anchors: dict[str, str | None]


class Recall(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    offered: bool
    population: int
    exact: RecallFigures
    partial: RecallFigures
    paraphrase: RecallFigures
    cued: Cued

    def kind(self, name: str) -> RecallFigures:
        """The figures of query kind ``name`` (``exact``, ``partial`` or ``paraphrase``)."""
        found: RecallFigures = getattr(self, name)
        return found


class Superseded(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """``scorers.LeakReport``."""

    pairs: int
    leaks: int
    leaked: list[str]
    leaking_requests: int
    first_leak: dict[str, int]
    stale_requests: int
    stub_mentions: int
    unseen: list[str]


class StubStability(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """``scorers.Stability``."""

    stubs: int
    rolled_up: int
    shifted: int
    violations: int
    examples: list[str]


# ---- safety, time, online --------------------------------------------------------------------


class Safety(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    growth_commits: int
    region_growth: int
    crossings: int
    max_passes_per_crossing: int
    mean_passes_per_crossing: float
    loops: int
    warnings: int
    refusals: int
    pairing_errors: int
    pairing_examples: list[str]
    log_mismatches: int
    over_window: int
    peak_context: int


class Timing(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    latency_ms: int | None
    """Simulated summariser latency per call (None online)."""
    pass_wall_mean_s: float
    pass_wall_max_s: float
    summariser_calls_per_pass: float
    wall_s: float


class ProbeOutcome(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """One handoff-probe question (``online.ProbeRecord``; the answer cut to 300 chars)."""

    pass_number: int = msgspec.field(name="pass")
    turn: int
    fact: str
    correct: bool
    stale: bool
    recall_calls: int
    recalled_expected: bool
    in_context: bool
    answer: str
    error: str | None


class OnlineSummary(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    questions: int
    errors: int
    correct: float | None
    stale: int
    recall_usage: float | None
    recalled_used: float | None
    records: list[ProbeOutcome]


# ---- the run ---------------------------------------------------------------------------------


class RunResult(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """Every score of one finished run (``runs[]`` of results.json)."""

    scenario: str
    backend: str
    seed: int
    spec_digest: str
    window: int
    threshold: int
    settings: dict[str, SettingValue]
    summariser: str
    counts: Counts
    passes: list[PassRecord]
    crossings: list[Crossing]
    context: list[int]
    """Input tokens of each conversation request."""
    cache: dict[str, CacheFigures]
    """By cache rule (``cache_rules.RULES``)."""
    what_if: WhatIf | None = None
    sensitivity: Sensitivity | None = None
    survival: Survival
    reachable: Reachable
    recall: Recall
    superseded: Superseded
    stability: StubStability
    safety: Safety
    time: Timing
    online: OnlineSummary | None
    error: str | None
    """Why the run stopped before its last turn (None: it completed)."""


class FailedRun(msgspec.Struct, rename="camel", kw_only=True, frozen=True, omit_defaults=True):
    """A run that produced no scores: set-up failed or its worker died."""

    backend: str
    error: str
    scenario: str = ""
    seed: int | None = None
    traceback: str | None = None


RunRecord: TypeAlias = RunResult | FailedRun


def as_record(run: RunRecord | dict[str, Any]) -> RunRecord:
    """The typed record of a run in its JSON form (a record passes through unchanged)."""
    if isinstance(run, RunResult | FailedRun):
        return run
    if "counts" in run:
        return msgspec.convert(run, RunResult)
    return msgspec.convert(run, FailedRun)


def as_json(run: RunRecord) -> dict[str, Any]:
    """The JSON form of a run record (what ``runs/*.json`` and ``results.json`` hold)."""
    found: dict[str, Any] = msgspec.to_builtins(run)
    return found
