"""The tables ``recallable.py`` prints (basic and recallable side by side) and its targets."""

from __future__ import annotations

from typing import Any

from _compaction_common import (
    Prices,
    RecallResult,
    SessionRun,
)
from _compaction_probe import PassRecord

CACHE_TARGET = 0.90
WALL_RATIO_TARGET = 1.3
SEARCH_SECONDS_TARGET = 0.5
SEARCH_RATIO_TARGET = 2.0
BACKENDS = ("basic", "recallable")


# ---- report -------------------------------------------------------------------------------------


def percent(x: float) -> str:
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
        [percent(b["cache_hit_ratio"]), percent(r["cache_hit_ratio"])],
        f"target >= {CACHE_TARGET:.0%} (recallable)",
    )
    _row(
        "  (reference: LCP prefix cache)",
        [percent(b["lcp_hit_ratio"]), percent(r["lcp_hit_ratio"])],
    )
    _row(
        "first request after a pass: hit ratio",
        [percent(b["first_hit_ratio"]), percent(r["first_hit_ratio"])],
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
        [percent(b["summariser_hit_ratio"]), percent(r["summariser_hit_ratio"])],
    )
    _row(
        "cache-hit ratio, all calls",
        [percent(b["cache_hit_ratio"]), percent(r["cache_hit_ratio"])],
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
