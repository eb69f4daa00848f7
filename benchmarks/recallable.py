"""Recallable vs basic compaction on the same long session: cache, cost, stubs, time, recall.

Runs the session of ``compaction_basic.py`` (seeded, ``--turns`` turns, default 300; a small
``--window``, default 8,000 tokens) through the real ``Agent`` twice, once per backend, with
the keyless ``extractive`` summariser. Budgets are scaled to the window and printed: threshold
0.8, retain window/6, and for the recallable backend chunk window/8, stub chunk/8 and state
window/10 (the basic summary gets the same window/10 budget).

Printed side by side:

* simulated cache-hit ratio (``DeepSeekCache`` over every request, in send order), overall and
  for the first conversation request after each pass (its uncached tokens); for reference, what
  an LCP prefix cache (OpenAI-like, no 128-token rounding) would reuse of the same requests;
* billed cost at DeepSeek-like prices (``--price-in`` $/M uncached input, cached input
  ``--cached-ratio`` of that, output ``--output-ratio`` of it), summariser calls included (the
  extractive summariser makes none: zero cost, and the script says so);
* summariser input tokens per pass (what ``ModelSummarizer`` would be sent), the stub region's
  size (tokens of the index checkpoints on the surface) after every pass, loops and growth;
* recall: for each planted anchor, ``history_search`` over the final log, then
  ``history_read`` of the first hit's checkpoint at the hit's message offset must contain it
  (needs ``dsh.recall``; skipped with a note if it is missing).

Then a *model* summariser variant of both backends — the summariser on another model than the
conversation's, each with its own simulated cache (the first ``--model-turns`` turns, default
50, because every call really waits): a
``ModelSummarizer`` served by the ``ScriptedProvider``'s ``summaries`` entries with
``delayMs`` = ``--summary-delay-ms`` (default 1000), to measure the wall time of a pass against
one summariser call (a pass is one call, or its regions' calls at once), the
summariser's input tokens, its cache hits and its cost.

Last, ``history_search`` over ``--search-mb`` MB (default 100; 0 skips) of shadowed tool-result
text: a synthetic log of index checkpoints of ~16 KB each (one default 4,000-token chunk),
one query timed through the ``history_search`` tool (best of 3) against a bare
``text.lower().find(query)`` over the same text concatenated.

Targets (PASS/MISS; a miss never makes the exit status non-zero): recallable overall cache-hit
ratio >= 90%; uncached tokens of the first request after a recallable pass <= basic's (mean)
+ that pass's new stub tokens; pass wall time <= 1.3 x one summariser call whatever the number
of chunks; planted-fact recall 100% (recallable); search <= 0.5 s per query and <= 2 x the bare
scan.

Run: ``uv run python benchmarks/recallable.py [--turns N] [--window W] [--seed S]
[--model-turns N] [--summary-delay-ms MS] [--search-mb MB] [--all-passes] [--json]``; the
budgets can be overridden with ``--retain-tokens``, ``--state-tokens``, ``--chunk-tokens`` and
``--stub-tokens`` (validated like the configuration).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _compaction_common import (
    PassRecord,
    Prices,
    RecallResult,
    SessionRun,
    basic_settings,
    check_recall,
    describe_settings,
    hit_ratio,
    mean,
    median,
    recall_available,
    recallable_settings,
    run_session,
    safety,
    verdict,
)
from dsh.config import Settings, validate_settings
from dsh.errors import ConfigError

CACHE_TARGET = 0.90
WALL_RATIO_TARGET = 1.3
SEARCH_SECONDS_TARGET = 0.5
SEARCH_RATIO_TARGET = 2.0
BACKENDS = ("basic", "recallable")


# ---- figures ------------------------------------------------------------------------------------


def backend_figures(run: SessionRun, prices: Prices) -> dict[str, Any]:
    conversation, compaction = run.conversation(), run.compaction()
    passes = run.passes
    firsts = [p.first_request for p in passes if p.first_request is not None]
    threshold = int(run.window * run.settings.threshold_ratio)
    saturated = next((turn for turn, _ in run.probe.warned_at), None)
    return {
        "model_calls": len(conversation),
        "passes": len(passes),
        **{f"safety_{k}": v for k, v in safety(run).items()},
        "first_warning_turn": saturated,
        "threshold": threshold,
        "max_request_tokens": max((c.input_tokens for c in conversation), default=0),
        "final_context_tokens": run.session.measure().total_tokens,
        "cache_hit_ratio": hit_ratio(run.calls),
        "conversation_hit_ratio": hit_ratio(conversation),
        "summariser_hit_ratio": hit_ratio(compaction),
        "lcp_hit_ratio": sum(c.prefix_kept for c in conversation)
        / max(1, sum(c.input_tokens for c in conversation)),
        "first_hit_ratio": hit_ratio(firsts),
        "first_uncached_mean": mean([c.uncached for c in firsts]),
        "first_uncached_median": median([c.uncached for c in firsts]),
        "first_prefix_kept_mean": mean([c.prefix_kept for c in firsts]),
        "new_stub_tokens_mean": mean([p.new_stub_tokens for p in passes]),
        "stubs": sum(p.stubs for p in passes),
        "stub_region_final": passes[-1].stub_region_tokens if passes else 0,
        "stub_region_max": max((p.stub_region_tokens for p in passes), default=0),
        "stub_region_half_window_turn": next(
            (p.turn for p in passes if p.stub_region_tokens >= run.window // 2), None
        ),
        "stub_region_window_turn": next(
            (p.turn for p in passes if p.stub_region_tokens >= run.window), None
        ),
        "summariser_calls": run.probe.summarize_calls,
        "summariser_input_tokens_mean": mean([p.summariser_input_tokens for p in passes]),
        "summariser_input_tokens_max": max((p.summariser_input_tokens for p in passes), default=0),
        "engine_ms_mean": mean([p.engine_s * 1000 for p in passes]),
        "engine_ms_median": median([p.engine_s * 1000 for p in passes]),
        "engine_ms_max": max((p.engine_s * 1000 for p in passes), default=0.0),
        "plan_ms_mean": mean([p.plan_s * 1000 for p in passes]),
        "summarize_ms_mean": mean([p.summarize_s * 1000 for p in passes]),
        "cost_conversation": prices.cost(conversation),
        "cost_summariser": prices.cost(compaction),
        "cost_total": prices.cost(run.calls),
        "wall_s": run.wall_s,
        "per_pass": [
            {
                "turn": p.turn,
                "before": p.tokens_before,
                "after": p.tokens_after,
                "stubs": p.stubs,
                "new_stub_tokens": p.new_stub_tokens,
                "stub_region": p.stub_region_tokens,
                "first_uncached": p.first_request.uncached if p.first_request else None,
                "summariser_input": p.summariser_input_tokens,
                "engine_ms": round(p.engine_s * 1000, 3),
                "wall_s": round(p.run_pass_s, 4),
            }
            for p in passes
        ],
    }


def first_request_check(basic: dict[str, Any], run: SessionRun) -> tuple[int, int]:
    """Recallable passes whose first request's uncached tokens <= basic's mean + new stubs."""
    bound = basic["first_uncached_mean"]
    checked = [p for p in run.passes if p.first_request is not None]
    within = sum(p.first_request.uncached <= bound + p.new_stub_tokens for p in checked)  # type: ignore[union-attr]
    return within, len(checked)


def wall_figures(run: SessionRun) -> dict[str, Any]:
    """Pass wall time (run_pass) against one summariser call (the median call duration)."""
    calls = [d for p in run.passes for d in p.call_s]
    one = median(calls)
    ratios = [p.run_pass_s / one for p in run.passes if one > 0]
    by_calls: dict[int, list[float]] = defaultdict(list)
    for p in run.passes:
        by_calls[len(p.call_s)].append(p.run_pass_s)
    return {
        "one_call_s": one,
        "pass_wall_median_s": median([p.run_pass_s for p in run.passes]),
        "pass_wall_max_s": max((p.run_pass_s for p in run.passes), default=0.0),
        "ratio_median": median(ratios),
        "ratio_max": max(ratios, default=0.0),
        "by_calls": {n: (len(v), max(v)) for n, v in sorted(by_calls.items())},
    }


# ---- history_search over a large log -----------------------------------------------------------


def build_search_log(megabytes: int, seed: int) -> tuple[Any, str, str]:
    """A session of index checkpoints, each shadowing two tool turns of ~8 KB results, until the
    results total ``megabytes`` MB; returns (session, the results concatenated, the needle)."""
    from dsh.events import (
        AssistantMessage,
        CompactionEnd,
        CompactionStart,
        CompactionSummary,
        Message,
        ModelSource,
        PluginSource,
        ReplaceOp,
        StepEnd,
        StepStart,
        TextBlock,
        ToolCall,
        ToolCallBlock,
        ToolResult,
        ToolResultBlock,
        ToolSource,
        TurnEnd,
        TurnEndReason,
        TurnStart,
        UserSource,
    )
    from dsh.store import MemoryStore
    from dsh.surface import Draft, Session

    rng = random.Random(seed)

    def line(day: int) -> str:
        clock = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        status = rng.choice(["ok", "ok", "ok", "retry", "skip"])
        return (
            f"2025-05-{day:02d}T{clock} worker-{rng.randint(1, 16)} batch "
            f"{rng.randint(1, 99999)} row {rng.randint(1, 10**6)} status={status} "
            f"latency={rng.randint(1, 900)}ms\n"
        )

    pool = ["".join(line(day) for _ in range(110)) for day in range(1, 29)]
    needle = "QUASAR-5521 lost heartbeat"
    session = Session.create(MemoryStore(), cwd="/bench")
    source = ModelSource(provider="bench", model="bench")
    texts: list[str] = []
    size, target, turn, checkpoint = 0, megabytes * 1_000_000, 0, 0
    needle_at = target // 2
    while size < target:
        checkpoint += 1
        drafts: list[Draft] = []
        base = len(session.events)
        shadowed: list[int] = []
        for _ in range(2):
            turn += 1
            text = f"== shard {turn} ==\n" + pool[turn % len(pool)]
            if size <= needle_at < size + len(text):
                text += f"2025-05-30T00:00:00 worker-3 {needle} after 30 s\n"
            size += len(text)
            texts.append(text)
            call_id = f"call-{turn}"
            call = ToolCallBlock(id=call_id, name="bash", arguments='{"command":"cat shard.log"}')
            seq = base + len(drafts)
            drafts += [
                Draft(TurnStart(turn=turn)),
                Draft(StepStart(turn=turn, step=1)),
                Draft(
                    Message(
                        id=f"u-{turn}",
                        role="user",
                        content=(TextBlock(text=f"show shard {turn}"),),
                        source=UserSource(),
                    )
                ),
                Draft(
                    AssistantMessage(
                        turn=turn,
                        step=1,
                        message=Message(
                            id=f"a-{turn}", role="assistant", content=(call,), source=source
                        ),
                    )
                ),
                Draft(
                    ToolCall(
                        turn=turn, step=1, call_id=call_id, name="bash", arguments=call.arguments
                    )
                ),
                Draft(
                    ToolResult(
                        turn=turn,
                        step=1,
                        message=Message(
                            id=f"r-{turn}",
                            role="tool",
                            content=(
                                ToolResultBlock(
                                    tool_call_id=call_id, content=(TextBlock(text=text),)
                                ),
                            ),
                            source=ToolSource(call_id=call_id),
                        ),
                    ),
                    source_event_seqs=(seq + 4,),
                ),
                Draft(StepEnd(turn=turn, step=1)),
                Draft(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed"))),
            ]
            shadowed += [seq + 2, seq + 3, seq + 5]
        start = base + len(drafts)
        cid = f"s{checkpoint}-1"
        drafts += [
            Draft(CompactionStart(compaction_id=cid, pass_id=f"s{checkpoint}", turn=turn)),
            Draft(
                CompactionSummary(
                    compaction_id=cid,
                    pass_id=f"s{checkpoint}",
                    kind="index",
                    summary=f"Shards {turn - 1}-{turn} printed.",
                    shadowed_range=(shadowed[0], shadowed[-1]),
                    shadowed_seqs=tuple(shadowed),
                    shadowed_token_count=0,
                    provider="bench",
                    model="bench",
                )
            ),
            Draft(
                Message(
                    id=f"checkpoint-{cid}",
                    role="user",
                    content=(TextBlock(text=f"[index] shards {turn - 1}-{turn}"),),
                    source=PluginSource(plugin="compact", compaction_id=cid),
                ),
                surface_op=ReplaceOp(start=shadowed[0], end=shadowed[-1]),
                source_event_seqs=(start, start + 1, *shadowed),
            ),
            Draft(CompactionEnd(compaction_id=cid, pass_id=f"s{checkpoint}", turn=turn)),
        ]
        session.append_many(drafts)
    return session, "\n".join(texts), needle


def search_bench(megabytes: int, seed: int) -> dict[str, Any]:
    from dsh.recall import HistorySearchTool
    from dsh.tools.base import ToolContext

    started = time.perf_counter()
    session, text, needle = build_search_log(megabytes, seed)
    built = time.perf_counter() - started
    ctx = ToolContext(
        workspace=Path("."), session_id=session.id, call_id="s", history=session.events
    )
    tool = HistorySearchTool()

    def best_of_3(fn: Any) -> tuple[float, Any]:
        best, result = float("inf"), None
        for _ in range(3):
            gc.collect()
            t = time.perf_counter()
            result = fn()
            best = min(best, time.perf_counter() - t)
        return best, result

    search_s, output = best_of_3(lambda: asyncio.run(tool.run({"query": needle}, ctx)))
    query = needle.lower()
    scan_s, position = best_of_3(lambda: text.lower().find(query))
    assert position >= 0 and needle in output.text, output.text[:300]
    return {
        "mb": len(text) / 1e6,
        "events": len(session.events),
        "checkpoints": output.meta["scanned"],
        "matched": output.meta["matched"],
        "build_s": built,
        "search_s": search_s,
        "scan_s": scan_s,
        "ratio": search_s / scan_s if scan_s else float("inf"),
    }


# ---- report -------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{x:.1%}"


def _row(name: str, values: list[str], note: str = "") -> None:
    print(f"{name:<46} {values[0]:>14} {values[1]:>14}   {note}".rstrip())


def report_main(
    runs: dict[str, SessionRun],
    f: dict[str, dict[str, Any]],
    recall: dict[str, list[RecallResult] | None],
    prices: Prices,
    targets: list[tuple[str, bool | None, str]],
) -> None:
    b, r = f["basic"], f["recallable"]
    _row("", ["basic", "recallable"])
    _row("passes (landed)", [f"{b['passes']}", f"{r['passes']}"])
    _row("index stubs committed", ["-", f"{r['stubs']}"])
    _row(
        "attempts refused by the inflation guard",
        [f"{b['safety_refused']}", f"{r['safety_refused']}"],
    )
    _row("passes that grew the context", [f"{b['safety_grew']}", f"{r['safety_grew']}"])
    _row(
        "passes in back-to-back steps",
        [f"{b['safety_back_to_back']}", f"{r['safety_back_to_back']}"],
    )
    _row(
        "steps left above threshold (warnings)",
        [f"{b['safety_warnings']}", f"{r['safety_warnings']}"],
    )
    _row(
        "first such warning at turn",
        [str(b["first_warning_turn"] or "-"), str(r["first_warning_turn"] or "-")],
    )
    _row(
        "largest request (tokens)",
        [f"{b['max_request_tokens']:,}", f"{r['max_request_tokens']:,}"],
        f"window {runs['basic'].window:,}",
    )
    _row(
        "cache-hit ratio, whole session",
        [_pct(b["cache_hit_ratio"]), _pct(r["cache_hit_ratio"])],
        f"target >= {CACHE_TARGET:.0%} (recallable)",
    )
    _row(
        "  (reference: LCP prefix cache)",
        [_pct(b["lcp_hit_ratio"]), _pct(r["lcp_hit_ratio"])],
    )
    _row(
        "first request after a pass: hit ratio",
        [_pct(b["first_hit_ratio"]), _pct(r["first_hit_ratio"])],
    )
    _row(
        "  uncached tokens (mean)",
        [f"{b['first_uncached_mean']:,.0f}", f"{r['first_uncached_mean']:,.0f}"],
    )
    _row(
        "  uncached tokens (median)",
        [f"{b['first_uncached_median']:,.0f}", f"{r['first_uncached_median']:,.0f}"],
    )
    _row(
        "  (reference: LCP prefix kept, mean)",
        [f"{b['first_prefix_kept_mean']:,.0f}", f"{r['first_prefix_kept_mean']:,.0f}"],
    )
    _row("new stub tokens per pass (mean)", ["-", f"{r['new_stub_tokens_mean']:,.0f}"])
    _row(
        "stub region after the last pass (tokens)",
        ["-", f"{r['stub_region_final']:,}"],
        f"{r['stub_region_final'] / runs['recallable'].window:.0%} of the window",
    )
    _row(
        "stub region >= 50% / 100% of the window at turn",
        [
            "-",
            f"{r['stub_region_half_window_turn'] or '-'} / {r['stub_region_window_turn'] or '-'}",
        ],
    )
    _row(
        "summariser calls (extractive)",
        [f"{b['summariser_calls']}", f"{r['summariser_calls']}"],
    )
    _row(
        "summariser input tokens per pass (mean)",
        [f"{b['summariser_input_tokens_mean']:,.0f}", f"{r['summariser_input_tokens_mean']:,.0f}"],
        "what a model summariser would be sent",
    )
    _row(
        "  (max)",
        [f"{b['summariser_input_tokens_max']:,}", f"{r['summariser_input_tokens_max']:,}"],
    )
    _row(
        "engine ms per pass excl. summariser (mean)",
        [f"{b['engine_ms_mean']:.2f}", f"{r['engine_ms_mean']:.2f}"],
    )
    _row(
        "  (median / max)",
        [
            f"{b['engine_ms_median']:.2f} / {b['engine_ms_max']:.1f}",
            f"{r['engine_ms_median']:.2f} / {r['engine_ms_max']:.1f}",
        ],
    )
    _row("  of which planning (mean)", [f"{b['plan_ms_mean']:.2f}", f"{r['plan_ms_mean']:.2f}"])
    _row(
        "extractive summariser ms per pass (mean)",
        [f"{b['summarize_ms_mean']:.2f}", f"{r['summarize_ms_mean']:.2f}"],
    )
    _row(
        "billed cost, conversation ($)",
        [f"{b['cost_conversation']:.4f}", f"{r['cost_conversation']:.4f}"],
    )
    _row(
        "billed cost, summariser ($)",
        [f"{b['cost_summariser']:.4f}", f"{r['cost_summariser']:.4f}"],
        "extractive: no model call, zero cost",
    )
    recall_cells = []
    for name in BACKENDS:
        results = recall[name]
        if results is None:
            recall_cells.append("n/a")
        else:
            hits = sum(x.rank == 1 for x in results)
            recall_cells.append(f"{hits}/{len(results)}")
    _row("planted-fact recall (search → read hit@1)", recall_cells, "target 100% (recallable)")
    print(
        f"\nprices: ${prices.input:g}/M uncached input, cached {prices.cached_ratio:g}x, "
        f"output {prices.output_ratio:g}x. The DeepSeek rule saves a prefix only where a whole "
        "request\nor reply ended; after a pass no earlier request ends inside the new prefix (not "
        "even after the frozen stubs),\nso the first request after a pass hits nothing; 'LCP' is "
        "what a longest-common-prefix cache would reuse."
    )


def report_passes(run: SessionRun, bound: float, all_rows: bool) -> None:
    print(
        f"{'pass':>4} {'turn':>4} {'step':>4}  {'tokens before → after':>19}  {'stubs':>5} "
        f"{'+tok':>5} {'region':>6} {'state':>5}  {'1st req uncached':>16} {'≤ bound':>7}  "
        f"{'LCP kept':>8}  {'summ. in':>8}  {'engine ms':>9}"
    )
    passes = run.passes
    shown = passes
    if not all_rows and len(passes) > 40:
        shown = [p for p in passes if p.number <= 15 or p.number % 20 == 0 or p is passes[-1]]

    def row(p: PassRecord) -> None:
        first = p.first_request
        uncached = f"{first.uncached:,}" if first else "-"
        ok = ("yes" if first.uncached <= bound + p.new_stub_tokens else "no") if first else "-"
        kept = f"{first.prefix_kept:,}" if first else "-"
        print(
            f"{p.number:>4} {p.turn or '-':>4} {p.step:>4}  "
            f"{p.tokens_before:>8,} → {p.tokens_after:>8,}  {p.stubs:>5} {p.new_stub_tokens:>5} "
            f"{p.stub_region_tokens:>6,} {p.state_tokens:>5}  {uncached:>16} {ok:>7}  "
            f"{kept:>8}  {p.summariser_input_tokens:>8,}  {p.engine_s * 1000:>9.2f}"
        )

    previous = 0
    for p in shown:
        if p.number > previous + 1:
            print(f"{'…':>4}")
        row(p)
        previous = p.number
    if len(shown) < len(passes):
        print(f"({len(passes) - len(shown)} rows omitted; --all-passes prints every pass)")


def report_model(
    mruns: dict[str, SessionRun],
    mf: dict[str, dict[str, Any]],
    walls: dict[str, dict[str, Any]],
    delay_ms: int,
) -> None:
    b, r = mf["basic"], mf["recallable"]
    wb, wr = walls["basic"], walls["recallable"]
    _row("", ["basic", "recallable"])
    _row("passes (landed)", [f"{b['passes']}", f"{r['passes']}"])
    _row("summariser calls", [f"{b['summariser_calls']}", f"{r['summariser_calls']}"])
    _row("one summariser call (median, s)", [f"{wb['one_call_s']:.3f}", f"{wr['one_call_s']:.3f}"])
    _row(
        "pass wall time (median / max, s)",
        [
            f"{wb['pass_wall_median_s']:.3f} / {wb['pass_wall_max_s']:.3f}",
            f"{wr['pass_wall_median_s']:.3f} / {wr['pass_wall_max_s']:.3f}",
        ],
    )
    _row(
        "  ratio to one call (median / max)",
        [
            f"{wb['ratio_median']:.2f} / {wb['ratio_max']:.2f}",
            f"{wr['ratio_median']:.2f} / {wr['ratio_max']:.2f}",
        ],
        f"target <= {WALL_RATIO_TARGET:g}x",
    )
    for name, w in walls.items():
        parts = [
            f"{n} call(s): {count} pass(es), max {m:.3f} s"
            for n, (count, m) in w["by_calls"].items()
        ]
        print(f"  {name} passes by calls: " + "; ".join(parts))
    _row(
        "summariser input tokens per pass (mean)",
        [f"{b['summariser_input_tokens_mean']:,.0f}", f"{r['summariser_input_tokens_mean']:,.0f}"],
    )
    _row(
        "  (max)",
        [f"{b['summariser_input_tokens_max']:,}", f"{r['summariser_input_tokens_max']:,}"],
    )
    _row(
        "summariser cache-hit ratio",
        [_pct(b["summariser_hit_ratio"]), _pct(r["summariser_hit_ratio"])],
    )
    _row(
        "cache-hit ratio, all calls",
        [_pct(b["cache_hit_ratio"]), _pct(r["cache_hit_ratio"])],
    )
    _row(
        "steps left above threshold (warnings)",
        [f"{b['safety_warnings']}", f"{r['safety_warnings']}"],
    )
    _row(
        "billed cost: conversation ($)",
        [f"{b['cost_conversation']:.4f}", f"{r['cost_conversation']:.4f}"],
    )
    _row(
        "billed cost: summariser ($)",
        [f"{b['cost_summariser']:.4f}", f"{r['cost_summariser']:.4f}"],
    )
    _row("billed cost: total ($)", [f"{b['cost_total']:.4f}", f"{r['cost_total']:.4f}"])
    _row("session wall time (s)", [f"{b['wall_s']:.1f}", f"{r['wall_s']:.1f}"])


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {str(k): _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--window", type=int, default=8000, help="context window (tokens)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--price-in", type=float, default=0.28, help="$/M uncached input")
    parser.add_argument("--cached-ratio", type=float, default=0.1, help="cached / uncached price")
    parser.add_argument("--output-ratio", type=float, default=2.0, help="output / input price")
    parser.add_argument(
        "--model-turns", type=int, default=50, help="turns of the model-summariser run (0 skips)"
    )
    parser.add_argument("--summary-delay-ms", type=int, default=1000)
    parser.add_argument("--search-mb", type=int, default=100, help="history_search size (0 skips)")
    parser.add_argument("--retain-tokens", type=int, help="default window/6")
    parser.add_argument("--state-tokens", type=int, help="state/summary budget; window/10")
    parser.add_argument("--chunk-tokens", type=int, help="recallable chunk; default window/8")
    parser.add_argument("--stub-tokens", type=int, help="recallable stub; default chunk/8")
    parser.add_argument("--all-passes", action="store_true", help="print every pass row")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    if args.turns < 10:
        parser.error("--turns must be at least 10")
    if args.window < 3000:
        parser.error("--window must be at least 3000 (the tools and system prompt take ~1,200)")
    prices = Prices(args.price_in, args.cached_ratio, args.output_ratio)
    settings = {
        "basic": basic_settings(args.window, retain=args.retain_tokens, state=args.state_tokens),
        "recallable": recallable_settings(
            args.window,
            retain=args.retain_tokens,
            state=args.state_tokens,
            chunk=args.chunk_tokens,
            stub=args.stub_tokens,
        ),
    }

    for value in settings.values():
        try:
            validate_settings(Settings(compaction=value))
        except ConfigError as exc:
            parser.error(str(exc))

    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as tmp:
        runs = {
            name: run_session(
                Path(tmp) / name,
                settings[name],
                window=args.window,
                turns=args.turns,
                seed=args.seed,
            )
            for name in BACKENDS
        }
        mruns: dict[str, SessionRun] = {}
        if args.model_turns > 0:
            mruns = {
                name: run_session(
                    Path(tmp) / f"model-{name}",
                    settings[name],
                    window=args.window,
                    turns=min(args.model_turns, args.turns),
                    seed=args.seed,
                    model_summarizer=True,
                    summary_delay_ms=args.summary_delay_ms,
                )
                for name in BACKENDS
            }
    f = {name: backend_figures(run, prices) for name, run in runs.items()}
    recall = {name: check_recall(run) for name, run in runs.items()}
    within, checked = first_request_check(f["basic"], runs["recallable"])
    r = f["recallable"]

    targets: list[tuple[str, bool | None, str]] = [
        (
            f"recallable cache-hit ratio >= {CACHE_TARGET:.0%}",
            r["cache_hit_ratio"] >= CACHE_TARGET,
            _pct(r["cache_hit_ratio"]),
        ),
        (
            "1st request after a pass: uncached <= basic's + new stubs",
            checked > 0 and within == checked,
            f"{within}/{checked} recallable passes within "
            f"(basic mean {f['basic']['first_uncached_mean']:,.0f})",
        ),
    ]
    rec = recall["recallable"]
    if rec is None:
        targets.append(("planted-fact recall 100% (recallable)", None, "dsh.recall not available"))
    else:
        hits = sum(x.rank == 1 for x in rec)
        targets.append(
            ("planted-fact recall 100% (recallable)", hits == len(rec), f"{hits}/{len(rec)}")
        )

    print(
        f"session: {args.turns} turns, {f['basic']['model_calls']} model calls, seed {args.seed}; "
        "extractive summariser; DeepSeek cache simulator over every request"
    )
    for name in BACKENDS:
        print(f"  {name:<10} {describe_settings(settings[name], args.window)}")
    print()
    report_main(runs, f, recall, prices, targets)
    if rec is None:
        print("recall: dsh.recall not available")
    else:
        for name in BACKENDS:
            results = recall[name] or []
            parts = [
                f"{x.anchor[:24]}@t{x.turn}: {'rank ' + str(x.rank) if x.rank else 'MISSED'}"
                f" ({x.hits} hit{'s' if x.hits != 1 else ''})"
                for x in results
            ]
            print(f"recall {name}: " + "; ".join(parts))

    print(
        "\nrecallable passes (stubs/+tok: index checkpoints this pass and their tokens; region:"
        " all stubs on the surface after it;\n'≤ bound': first-request uncached <= basic mean "
        f"{f['basic']['first_uncached_mean']:,.0f} + this pass's new stub tokens; LCP kept: prefix"
        " shared with the previous request)"
    )
    report_passes(runs["recallable"], f["basic"]["first_uncached_mean"], args.all_passes)

    mf: dict[str, dict[str, Any]] = {}
    walls: dict[str, dict[str, Any]] = {}
    if mruns:
        mf = {name: backend_figures(run, prices) for name, run in mruns.items()}
        walls = {name: wall_figures(run) for name, run in mruns.items()}
        turns = mruns["basic"].turns
        print(
            f"\nmodel summariser variant: first {turns} turns of the same session; every compaction"
            f" call is a ScriptedProvider summary with delayMs {args.summary_delay_ms}"
        )
        report_model(mruns, mf, walls, args.summary_delay_ms)
        name = f"pass wall time <= {WALL_RATIO_TARGET:g}x one summariser call"
        if not any(run.passes for run in mruns.values()):
            targets.append((name, None, "no pass in the model-summariser run"))
        else:
            ratio_max = max(w["ratio_max"] for w in walls.values())
            most = max(len(p.call_s) for run in mruns.values() for p in run.passes)
            targets.append(
                (
                    name,
                    ratio_max <= WALL_RATIO_TARGET,
                    f"max {ratio_max:.2f}x over passes of 1-{most} concurrent calls",
                )
            )
    else:
        targets.append((f"pass wall time <= {WALL_RATIO_TARGET:g}x one call", None, "skipped"))

    search: dict[str, Any] | None = None
    if args.search_mb <= 0:
        targets.append(("history_search over large logs", None, "skipped (--search-mb 0)"))
    elif not recall_available():
        print("\nhistory_search: dsh.recall not available")
        targets.append(("history_search over large logs", None, "dsh.recall not available"))
    else:
        search = search_bench(args.search_mb, args.seed)
        print(
            f"\nhistory_search over {search['mb']:.0f} MB of shadowed tool-result text "
            f"({search['checkpoints']:,} checkpoints, {search['events']:,} events; log built in "
            f"{search['build_s']:.1f} s):"
        )
        rows = [
            ("one history_search tool query (best of 3)", f"{search['search_s']:.3f} s"),
            ("bare text.lower().find(query) over the same text", f"{search['scan_s']:.3f} s"),
            ("ratio", f"{search['ratio']:.2f}x"),
        ]
        for name, value in rows:
            print(f"  {name:<56} {value}")
        targets.append(
            (
                f"search <= {SEARCH_SECONDS_TARGET:g} s per query",
                search["search_s"] <= SEARCH_SECONDS_TARGET,
                f"{search['search_s']:.3f} s",
            )
        )
        targets.append(
            (
                f"search <= {SEARCH_RATIO_TARGET:g}x the bare scan",
                search["ratio"] <= SEARCH_RATIO_TARGET,
                f"{search['ratio']:.2f}x",
            )
        )

    print("\ntargets")
    for name, ok, detail in targets:
        mark = "SKIP" if ok is None else verdict(ok)
        print(f"  {mark}  {name:<58} {detail}")

    if args.json:
        out = {
            "extractive": f,
            "model": mf,
            "wall": {
                k: {**v, "by_calls": {str(n): c for n, c in v["by_calls"].items()}}
                for k, v in walls.items()
            },
            "search": search,
            "recall": {
                name: None if res is None else [vars(x) for x in res]
                for name, res in recall.items()
            },
            "targets": [{"name": n, "ok": ok, "detail": d} for n, ok, d in targets],
        }
        print(json.dumps(_rounded(out)))


if __name__ == "__main__":
    main()
