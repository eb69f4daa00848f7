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
import json
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from _compaction_common import (
    Prices,
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
from _recallable_report import (
    BACKENDS,
    CACHE_TARGET,
    SEARCH_RATIO_TARGET,
    SEARCH_SECONDS_TARGET,
    WALL_RATIO_TARGET,
    percent,
    report_main,
    report_model,
    report_passes,
)
from _search_log import search_bench
from dsh.config import Settings, validate_settings
from dsh.errors import ConfigError

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
            percent(r["cache_hit_ratio"]),
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
