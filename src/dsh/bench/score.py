"""Every score of one finished bench run, as its typed record (``dsh.bench.results.RunResult``,
the ``runs[]`` item of results.json); the scorers themselves are in ``dsh.bench.scorers`` and
``dsh.bench.recall_scores``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from dsh.agent import rebuild_requests
from dsh.bench.cache_rules import RULES, AnthropicRule, DeepSeekRule, load_prices, make_rule
from dsh.bench.options import RunOptions, interval_name, sensitivity_intervals
from dsh.bench.recall_scores import cues, paraphrase_key, recall
from dsh.bench.records import Crossing, PassRecord
from dsh.bench.results import (
    CacheFigures,
    Counts,
    Cued,
    CurrentSurvival,
    IntervalFigures,
    Layout,
    OnlineSummary,
    Reachable,
    Recall,
    RunResult,
    Safety,
    Sensitivity,
    StubBreakpointWhatIf,
    SupersededSurvival,
    Survival,
    Timing,
    WhatIf,
)
from dsh.bench.scenario import Scenario
from dsh.bench.scorers import (
    cache_figures,
    growth_commits,
    message_text,
    pairing_errors,
    passes_per_crossing,
    raw_anchors,
    stub_stability,
    superseded_leaks,
    survival,
    survival_split,
)
from dsh.bench.trace import Trace, checkpoint_class
from dsh.config import CompactionSettings
from dsh.events import Event
from dsh.llm.prices import Price
from dsh.llm.types import ModelRequest
from dsh.recall import SpanCache
from dsh.surface import Session, checkpoint_kind


@dataclass(frozen=True, slots=True)
class RunLog:
    """What a finished run leaves to score."""

    session: Session
    trace: Trace
    requests: Sequence[ModelRequest]
    passes: Sequence[PassRecord]
    crossings: Sequence[Crossing]
    warnings: int
    refusals: int
    recall_offered: bool
    wall_s: float = 0.0
    """Wall time of the whole run."""
    error: str | None = None
    """Why the run stopped before its last turn."""
    online: OnlineSummary | None = None
    """The handoff probe's figures (online mode)."""


def score_run(
    scenario: Scenario,
    backend: str,
    log: RunLog,
    *,
    settings: CompactionSettings,
    options: RunOptions,
) -> RunResult:
    """Every score of one finished run (see ``dsh.bench.scorers``)."""
    final = log.requests[-1] if log.requests else None
    context = [c.input_tokens for c in log.trace.calls if c.purpose == "conversation"]
    recalled = recall_figures(scenario, log.session.events, final, offered=log.recall_offered)
    survived, reachable = reach_figures(scenario, final, recalled, offered=log.recall_offered)
    pairs = [(old.anchor, new.anchor) for old, new in scenario.supersessions()]
    cache, what_if, sensitivity = cache_section(log.trace, options)
    return RunResult(
        scenario=scenario.name,
        backend=backend,
        seed=scenario.seed,
        spec_digest=scenario.spec_digest,
        window=scenario.window,
        threshold=int(scenario.window * settings.threshold_ratio),
        settings=settings_echo(settings),
        summariser="model" if options.online else "extractive (billed as a model call)",
        counts=counts_section(scenario, log),
        passes=list(log.passes),
        crossings=list(log.crossings),
        context=context,
        cache=cache,
        what_if=what_if,
        sensitivity=sensitivity,
        survival=survived,
        reachable=reachable,
        recall=recalled,
        superseded=superseded_leaks(log.requests, pairs).figures(),
        stability=stub_stability(log.requests).figures(),
        safety=safety_section(scenario, log, context),
        time=time_section(log, options),
        online=log.online,
        error=log.error,
    )


ECHO_LEFT_OUT = frozenset({"overrides", "summarizer_api_key_env"})
"""Not echoed: per-model overrides, and where a key would be read from (no setting of the run)."""


def settings_echo(settings: CompactionSettings) -> dict[str, Any]:
    """The run's ``[compaction]`` settings, ``ECHO_LEFT_OUT`` left out."""
    found = msgspec.structs.asdict(settings)
    return {key: value for key, value in found.items() if key not in ECHO_LEFT_OUT}


def counts_section(scenario: Scenario, log: RunLog) -> Counts:
    layout = [checkpoint_kind(log.session, seq) or "tail" for seq in log.session.nodes]
    return Counts(
        events=len(log.session.events),
        turns=len(scenario.turns),
        requests=len(log.requests),
        summariser_calls=sum(c.purpose == "compaction" for c in log.trace.calls),
        final_layout=Layout(
            index=layout.count("index"), state=layout.count("state"), tail=layout.count("tail")
        ),
    )


def reach_figures(
    scenario: Scenario,
    final: ModelRequest | None,
    recalled: Recall,
    *,
    offered: bool,
) -> tuple[Survival, Reachable]:
    """``survival`` (all facts, then current and superseded apart) and ``reachable``."""
    facts = scenario.facts
    present = survival(final, [f.anchor for f in facts]).present
    ranks = recalled.exact.ranks
    reachable = [
        f.anchor
        for f in facts
        if present[f.anchor] or (offered and (ranks.get(f.anchor) or 99) <= 5)
    ]
    current = {f.anchor for f in scenario.current_facts()}
    split = survival_split(
        final,
        [f.anchor for f in facts if f.anchor in current],
        [f.anchor for f in facts if f.anchor not in current],
    )
    survived = Survival(
        share=sum(present.values()) / len(present) if present else 1.0,
        present=present,
        current=msgspec.convert(split["current"], CurrentSurvival),
        superseded=msgspec.convert(split["superseded"], SupersededSurvival),
    )
    return survived, Reachable(
        share=len(reachable) / len(facts) if facts else 1.0,
        anchors=reachable,
        current=sum(a in current for a in reachable),
        current_n=len(current),
    )


def recall_figures(
    scenario: Scenario, events: Sequence[Event], final: ModelRequest | None, *, offered: bool
) -> Recall:
    """Recall over the facts no longer verbatim in an original message of the final request:
    exact, partial and paraphrase queries, and which anchors the stub/state text cues."""
    raw = raw_anchors(final, [f.anchor for f in scenario.facts])
    compacted = [f for f in scenario.facts if f.anchor not in raw]
    cache = SpanCache()
    paraphrases = [
        (paraphrase_key(f.anchor, q), f.anchor, q) for f in compacted for q in f.paraphrases
    ]
    exact = recall(events, [(f.anchor, f.anchor) for f in compacted], cache=cache)
    partial = recall(events, [(f.anchor, f.query) for f in compacted], cache=cache)
    paraphrase = recall(events, paraphrases, cache=cache)
    checkpoints = "\n".join(
        message_text(m) for m in (final.messages if final else ()) if checkpoint_class(m)
    )
    cued = cues(
        events,
        checkpoints,
        {f.anchor: [f.anchor, f.query, *f.paraphrases] for f in compacted},
        cache=cache,
    )
    return Recall(
        offered=offered,
        population=len(compacted),
        exact=exact.figures(),
        partial=partial.figures(),
        paraphrase=paraphrase.figures(),
        cued=Cued(
            n=len(cued),
            share=sum(c is not None for c in cued.values()) / len(cued) if cued else 0.0,
            anchors=cued,
        ),
    )


def cache_section(
    trace: Trace, options: RunOptions
) -> tuple[dict[str, CacheFigures], WhatIf, Sensitivity]:
    """Figures under every rule, the Anthropic what-if without the stub-region breakpoint, and
    the sensitivity of the DeepSeek rule to its (undocumented) interval."""
    prices = load_prices(options.prices)
    knobs = options.cache

    def figures(rule: Any, price: Price, **kwargs: Any) -> CacheFigures:
        found = cache_figures(trace.calls, trace.replay(rule, **kwargs), price, rule.view)
        return msgspec.convert(found, CacheFigures)

    cache: dict[str, CacheFigures] = {
        rule: figures(
            make_rule(
                rule, interval=knobs.deepseek_interval, evict_minutes=knobs.openai_evict_minutes
            ),
            prices[rule],
        )
        for rule in RULES
    }
    what_if = figures(AnthropicRule(), prices["anthropic"], stub_breakpoint=False)
    sensitivity: dict[str, IntervalFigures] = {}
    for interval in sensitivity_intervals(knobs.deepseek_interval):
        found = (
            cache["deepseek"]
            if interval == knobs.deepseek_interval
            else figures(DeepSeekRule(interval), prices["deepseek"])
        )
        sensitivity[interval_name(interval)] = IntervalFigures(
            hit_ratio=found.hit_ratio,
            input_tokens=found.input_tokens,
            read_tokens=found.read_tokens,
            cost=found.cost,
            first_after_pass_hit_ratio=found.first_after_pass.hit_ratio,
        )
    breakpoint_figures = StubBreakpointWhatIf(
        hit_ratio=what_if.hit_ratio,
        input_tokens=what_if.input_tokens,
        read_tokens=what_if.read_tokens,
        cost=what_if.cost,
        first_after_pass=what_if.first_after_pass,
    )
    return (
        cache,
        WhatIf(anthropic_without_stub_breakpoint=breakpoint_figures),
        Sensitivity(deepseek_interval=sensitivity),
    )


def safety_section(scenario: Scenario, log: RunLog, context: Sequence[int]) -> Safety:
    requests = log.requests
    pairing = [
        (i, errors) for i, r in enumerate(requests) if (errors := pairing_errors(r.messages))
    ]
    rebuilt = [request for _, request in rebuild_requests(log.session.events)]
    mismatches = sum(a != b for a, b in zip(rebuilt, requests, strict=False)) + abs(
        len(rebuilt) - len(requests)
    )
    per_crossing = passes_per_crossing(c.passes for c in log.crossings)
    return Safety(
        growth_commits=growth_commits((p.tokens_before, p.tokens_after) for p in log.passes),
        region_growth=sum(p.region_growth for p in log.passes),
        crossings=int(per_crossing["crossings"]),
        max_passes_per_crossing=int(per_crossing["max"]),
        mean_passes_per_crossing=per_crossing["mean"],
        loops=int(per_crossing["loops"]),
        warnings=log.warnings,
        refusals=log.refusals,
        pairing_errors=len(pairing),
        pairing_examples=[f"request {i}: {e[0]}" for i, e in pairing[:3]],
        log_mismatches=mismatches,
        over_window=sum(tokens > scenario.window for tokens in context),
        peak_context=max(context, default=0),
    )


def time_section(log: RunLog, options: RunOptions) -> Timing:
    passes = log.passes
    walls = [p.wall_s for p in passes]
    return Timing(
        latency_ms=options.latency_ms if options.online is None else None,
        pass_wall_mean_s=sum(walls) / len(walls) if walls else 0.0,
        pass_wall_max_s=max(walls, default=0.0),
        summariser_calls_per_pass=(
            sum(p.summariser_calls for p in passes) / len(passes) if passes else 0.0
        ),
        wall_s=log.wall_s,
    )
