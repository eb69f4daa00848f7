"""The report's method notes, written from the run's own settings (``meta.json``), so each
sentence is true of the run it describes (``tests/bench/test_method.py`` checks them one by
one against the settings)."""

from __future__ import annotations

from typing import Any

from dsh.bench.cache_rules import (
    ANTHROPIC_LOOKBACK_BLOCKS,
    ANTHROPIC_MIN_TOKENS,
    DEEPSEEK_UNIT,
    OPENAI_INCREMENT,
    OPENAI_MIN_TOKENS,
)
from dsh.bench.options import interval_name, sensitivity_intervals


def what_was_real(meta: dict[str, Any]) -> list[str]:
    """What ran for real and what was simulated, by mode."""
    notes = [
        "Real: the agent loop, the tools (in a temporary workspace), the compaction engine and "
        "backends, the recall tools, and the summariser's request, built by "
        "`build_summary_request`, the function `ModelSummarizer` sends."
    ]
    online = meta.get("online")
    if meta.get("mode") == "online" and online:
        where = online.get("base_url") or "the provider's default endpoint"
        key = online.get("api_key_env") or (
            "the route's own (provider.api_key, else the provider's variable; an "
            "openai-compatible server other than api.openai.com gets none)"
        )
        notes.append(
            f"Real (online): the summariser and the handoff probe, "
            f"`{online.get('provider')}:{online.get('model')}` at {where}, with the key from {key}."
        )
        notes.append(
            "Simulated: the conversation model is `scripted` (its turns are scenario data), and "
            "every cache figure and price comes from the cache rules below."
        )
    else:
        notes.append(
            "Simulated: the conversation model is `scripted` (its turns are scenario data); the "
            "summariser's text comes from `extractive`, billed as that model call, with a "
            f"latency of {meta.get('latencyMs')} ms per call; every cache figure and price "
            "comes from the cache rules below."
        )
    return notes


def cache_notes(meta: dict[str, Any]) -> list[str]:
    cache = meta.get("cache", {})
    prices = meta.get("prices", {}).get("anthropic", {})
    evict = cache.get("openaiEvictMinutes")
    interval = cache.get("deepseekInterval")
    sensitivity = ", ".join(interval_name(i) for i in sensitivity_intervals(interval))
    return [
        "Requests are segmented in provider order (tools, system, then one segment per message; "
        "one per content block for anthropic) and counted with dsh's token heuristic (about 4 "
        "characters a token); a segment that differs at all misses from its first byte.",
        f"Simulated clock: each conversation request comes {cache.get('stepSeconds')} s after the "
        "previous one; a pass's summariser calls run at the time of the request that follows.",
        "deepseek: prefix units are persisted at the end of each request and each reply, at the "
        "prefix a request shares with earlier traffic, and every "
        f"{interval_name(interval)} tokens, in {DEEPSEEK_UNIT}-token units; a "
        "request hits the longest persisted unit that is a full prefix of it.",
        "DeepSeek does not document the interval of the fixed-interval units; the sensitivity "
        f"table shows intervals {sensitivity}.",
        "deepseek-strict: only whole earlier requests and request + reply are persisted, with no "
        f"{DEEPSEEK_UNIT}-token rounding.",
        f"openai: floor(LCP/{OPENAI_INCREMENT})×{OPENAI_INCREMENT} against earlier prompts, for "
        f"prompts of at least {OPENAI_MIN_TOKENS} tokens; "
        + (
            "cached prefixes are never evicted."
            if evict is None
            else f"a prefix unused for {evict} minutes is evicted."
        ),
        "anthropic: breakpoints where `dsh.llm.anthropic` puts them (the system block, the end "
        "of the frozen stub region and the last block of the last message), a "
        f"{ANTHROPIC_LOOKBACK_BLOCKS}-block lookback counted in content blocks, a "
        f"{ANTHROPIC_MIN_TOKENS}-token minimum, writes "
        f"×{prices.get('cache_write')}, reads ×{prices.get('cache_read')}, and entries that live "
        f"{cache.get('anthropicTtlS')} s from their last write or read.",
        "Probe calls (online mode) are left out of every cost and cache figure.",
    ]


SCORING_NOTES = [
    "Survival: current facts (never superseded) whose anchor is verbatim anywhere in the final "
    "request; superseded values are counted apart, as shown (anywhere) and shown as current (in a "
    "state checkpoint or basic summary, or in an index stub that does not mark them as replaced).",
    "Recall: over the facts no longer verbatim in an original message of the final request, "
    "`history_search` with the exact anchor, the scenario's partial query (a shorter literal "
    "part of it) and each paraphrase (sharing no 8-character substring with it), then "
    "`history_read` of each hit in order; the rank of the first page holding the anchor, within "
    "10 hits.",
    "Cued: the stub/state text of the final request contains one of the fact's queries, and that "
    "query finds the fact within 5 hits.",
    "Reachable: in the final request, or exact recall hit@5 where the arm offers the recall tools "
    "(basic+recall and recallable).",
    "Superseded leak: after the new value first appears, a state checkpoint, basic summary or "
    "unmarked index stub names the old value while no original message of that request shows the "
    "new one; with the new value still verbatim it is counted as stale.",
    "Commits that grew the context: passes whose tokens after are at least the tokens before; "
    "passes per crossing: passes run by one pre-step that found the context over the threshold.",
]


def method_notes(meta: dict[str, Any]) -> list[str]:
    """Every sentence of the method section, as bullet text."""
    seeds = ", ".join(str(s) for s in meta.get("seeds", [meta.get("seed")]))
    runs = [
        f"Seeds: {seeds}; arms: {', '.join(meta.get('backends', []))}; scenarios: "
        f"{', '.join(meta.get('scenarioOrder', []))}."
    ]
    return [*runs, *what_was_real(meta), *cache_notes(meta), *SCORING_NOTES]
