"""Every score of one finished bench run, as the JSON-able ``runs[]`` record of results.json
(the scorers themselves are in ``dsh.bench.scorers`` and ``dsh.bench.recall_scores``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import msgspec

from dsh.agent import rebuild_requests
from dsh.bench.cache_rules import RULES, AnthropicRule, DeepSeekRule, load_prices, make_rule
from dsh.bench.options import RunOptions, interval_name, sensitivity_intervals
from dsh.bench.recall_scores import cues, paraphrase_key, recall
from dsh.bench.records import Crossing, PassRecord
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
from dsh.compaction.recallable import checkpoint_kind
from dsh.config import CompactionSettings
from dsh.events import Event
from dsh.llm.prices import Price
from dsh.llm.types import ModelRequest
from dsh.recall import SpanCache
from dsh.surface import Session


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


def score_run(
    scenario: Scenario,
    backend: str,
    log: RunLog,
    *,
    settings: CompactionSettings,
    options: RunOptions,
) -> dict[str, Any]:
    """Every score of one finished run (see ``dsh.bench.scorers``)."""
    events = log.session.events
    final = log.requests[-1] if log.requests else None
    context = [c.input_tokens for c in log.trace.calls if c.purpose == "conversation"]
    recalled = recall_figures(scenario, events, final, offered=log.recall_offered)
    reached = reach_figures(scenario, final, recalled, offered=log.recall_offered)
    leaks = superseded_leaks(
        log.requests, [(old.anchor, new.anchor) for old, new in scenario.supersessions()]
    )
    layout = [checkpoint_kind(log.session, seq) or "tail" for seq in log.session.nodes]
    cache, extra = cache_section(log.trace, options)
    return {
        "scenario": scenario.name,
        "backend": backend,
        "seed": scenario.seed,
        "specDigest": scenario.spec_digest,
        "window": scenario.window,
        "threshold": int(scenario.window * settings.threshold_ratio),
        "settings": {k: v for k, v in msgspec.structs.asdict(settings).items() if k != "overrides"},
        "summariser": "model" if options.online else "extractive (billed as a model call)",
        "counts": {
            "events": len(events),
            "turns": len(scenario.turns),
            "requests": len(log.requests),
            "summariserCalls": sum(c.purpose == "compaction" for c in log.trace.calls),
            "finalLayout": {k: layout.count(k) for k in ("index", "state", "tail")},
        },
        "passes": [asdict(p) for p in log.passes],
        "crossings": [asdict(c) for c in log.crossings],
        "context": context,
        "cache": cache,
        **extra,
        **reached,
        "recall": recalled,
        "superseded": leaks.as_dict(),
        "stability": stub_stability(log.requests).as_dict(),
        "safety": safety_section(scenario, log, context),
        "time": time_section(log.passes, options),
        "online": None,
    }


def reach_figures(
    scenario: Scenario,
    final: ModelRequest | None,
    recalled: dict[str, Any],
    *,
    offered: bool,
) -> dict[str, Any]:
    """``survival`` (all facts, then current and superseded apart) and ``reachable``."""
    facts = scenario.facts
    present = survival(final, [f.anchor for f in facts]).present
    ranks = recalled["exact"]["ranks"]
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
    return {
        "survival": {
            "share": sum(present.values()) / len(present) if present else 1.0,
            "present": present,
            **split,
        },
        "reachable": {
            "share": len(reachable) / len(facts) if facts else 1.0,
            "anchors": reachable,
            "current": sum(a in current for a in reachable),
            "currentN": len(current),
        },
    }


def recall_figures(
    scenario: Scenario, events: Sequence[Event], final: ModelRequest | None, *, offered: bool
) -> dict[str, Any]:
    """Recall over the facts no longer verbatim in an original message of the final request:
    exact, partial and paraphrase queries, and which anchors the stub/state text cues."""
    raw = raw_anchors(final, [f.anchor for f in scenario.facts])
    compacted = [f for f in scenario.facts if f.anchor not in raw]
    cache = SpanCache()
    kinds = {
        "exact": recall(events, [(f.anchor, f.anchor) for f in compacted], cache=cache),
        "partial": recall(events, [(f.anchor, f.query) for f in compacted], cache=cache),
        "paraphrase": recall(
            events,
            [(paraphrase_key(f.anchor, q), f.anchor, q) for f in compacted for q in f.paraphrases],
            cache=cache,
        ),
    }
    checkpoints = "\n".join(
        message_text(m) for m in (final.messages if final else ()) if checkpoint_class(m)
    )
    cued = cues(
        events,
        checkpoints,
        {f.anchor: [f.anchor, f.query, *f.paraphrases] for f in compacted},
        cache=cache,
    )
    return {
        "offered": offered,
        "population": len(compacted),
        **{kind: score.as_dict() for kind, score in kinds.items()},
        "cued": {
            "n": len(cued),
            "share": sum(c is not None for c in cued.values()) / len(cued) if cued else 0.0,
            "anchors": cued,
        },
    }


def cache_section(trace: Trace, options: RunOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """Figures under every rule, the Anthropic stub-breakpoint what-if, and the sensitivity of
    the DeepSeek rule to its (undocumented) interval."""
    prices = load_prices(options.prices)
    knobs = options.cache

    def figures(rule: Any, price: Price, **kwargs: Any) -> dict[str, Any]:
        return cache_figures(trace.calls, trace.replay(rule, **kwargs), price, rule.view)

    cache: dict[str, Any] = {
        rule: figures(
            make_rule(
                rule, interval=knobs.deepseek_interval, evict_minutes=knobs.openai_evict_minutes
            ),
            prices[rule],
        )
        for rule in RULES
    }
    keys = ("hitRatio", "inputTokens", "readTokens", "cost", "firstAfterPass")
    what_if = figures(AnthropicRule(), prices["anthropic"], stub_breakpoint=True)
    sensitivity = {}
    for interval in sensitivity_intervals(knobs.deepseek_interval):
        found = (
            cache["deepseek"]
            if interval == knobs.deepseek_interval
            else figures(DeepSeekRule(interval), prices["deepseek"])
        )
        sensitivity[interval_name(interval)] = {
            "hitRatio": found["hitRatio"],
            "inputTokens": found["inputTokens"],
            "readTokens": found["readTokens"],
            "cost": found["cost"],
            "firstAfterPassHitRatio": found["firstAfterPass"]["hitRatio"],
        }
    extra = {
        "whatIf": {"anthropicStubBreakpoint": {key: what_if[key] for key in keys}},
        "sensitivity": {"deepseekInterval": sensitivity},
    }
    return cache, extra


def safety_section(scenario: Scenario, log: RunLog, context: Sequence[int]) -> dict[str, Any]:
    requests = log.requests
    pairing = [
        (i, errors) for i, r in enumerate(requests) if (errors := pairing_errors(r.messages))
    ]
    rebuilt = [request for _, request in rebuild_requests(log.session.events)]
    mismatches = sum(a != b for a, b in zip(rebuilt, requests, strict=False)) + abs(
        len(rebuilt) - len(requests)
    )
    per_crossing = passes_per_crossing(c.passes for c in log.crossings)
    return {
        "growthCommits": growth_commits((p.tokens_before, p.tokens_after) for p in log.passes),
        "regionGrowth": sum(p.region_growth for p in log.passes),
        **{
            f"{k}PassesPerCrossing" if k in ("max", "mean") else k: v
            for k, v in per_crossing.items()
        },
        "warnings": log.warnings,
        "refusals": log.refusals,
        "pairingErrors": len(pairing),
        "pairingExamples": [f"request {i}: {e[0]}" for i, e in pairing[:3]],
        "logMismatches": mismatches,
        "overWindow": sum(tokens > scenario.window for tokens in context),
        "peakContext": max(context, default=0),
    }


def time_section(passes: Sequence[PassRecord], options: RunOptions) -> dict[str, Any]:
    walls = [p.wall_s for p in passes]
    return {
        "latencyMs": options.latency_ms if options.online is None else None,
        "passWallMeanS": sum(walls) / len(walls) if walls else 0.0,
        "passWallMaxS": max(walls, default=0.0),
        "summariserCallsPerPass": (
            sum(p.summariser_calls for p in passes) / len(passes) if passes else 0.0
        ),
    }
