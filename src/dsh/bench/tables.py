"""The report's figures and tables: each run flattened to sums that pool across scenarios and
seeds (``flat``, ``pool``), the metric rows of the per-scenario tables (``rows``), and the
markdown table they make (``table``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dsh.bench.cache_rules import RULES
from dsh.bench.results import (
    FailedRun,
    OnlineSummary,
    Recall,
    RunRecord,
    RunResult,
    Safety,
    Superseded,
    Survival,
    as_record,
)

BACKEND_ORDER = ("off", "basic", "basic+recall", "recallable")
MAX_KEYS = ("maxPerCrossing", "peak", "passWallMax")
KINDS = ("exact", "partial", "paraphrase")


def order(backend: str) -> int:
    return BACKEND_ORDER.index(backend) if backend in BACKEND_ORDER else len(BACKEND_ORDER)


# ---- flat figures ----------------------------------------------------------------------------


def flat(run: RunRecord | dict[str, Any]) -> dict[str, Any]:
    """The figures of one run (its record, or the record's JSON form) as sums that pool across
    scenarios."""
    record = as_record(run)
    if isinstance(record, FailedRun):
        return {
            "errors": 1,
            "backend": record.backend,
            "recallOffered": record.backend in ("basic+recall", "recallable"),
        }
    figures = {
        "backend": record.backend,
        "events": record.counts.events,
        "requests": record.counts.requests,
        "passes": len(record.passes),
        **_safety_figures(record.safety),
        "compacted": record.recall.population,
        "recallOffered": record.recall.offered,
        **_recall_figures(record.recall),
        **_survival_figures(record.survival),
        "reachable": len(record.reachable.anchors),
        "reachableCurrent": record.reachable.current,
        **_superseded_figures(record.superseded),
        "stubs": record.stability.stubs,
        "stubViolations": record.stability.violations,
        "summariserCalls": record.counts.summariser_calls,
        "wall": record.time.wall_s,
        "passWallSum": sum(p.wall_s for p in record.passes),
        "passWallMax": record.time.pass_wall_max_s,
        "tokensAfterSum": sum(p.tokens_after for p in record.passes),
        "errors": 1 if record.error else 0,
    }
    figures.update(_online_figures(record.online))
    figures.update(_cache_figures(record))
    return figures


def _safety_figures(safety: Safety) -> dict[str, Any]:
    return {
        "crossings": safety.crossings,
        "maxPerCrossing": safety.max_passes_per_crossing,
        "loops": safety.loops,
        "growth": safety.growth_commits,
        "regionGrowth": safety.region_growth,
        "warnings": safety.warnings,
        "pairing": safety.pairing_errors,
        "mismatches": safety.log_mismatches,
        "overWindow": safety.over_window,
        "peak": safety.peak_context,
    }


def _superseded_figures(superseded: Superseded) -> dict[str, Any]:
    return {
        "leakPairs": superseded.pairs,
        "leaks": superseded.leaks,
        "leakingRequests": superseded.leaking_requests,
        "staleRequests": superseded.stale_requests,
        "stubMentions": superseded.stub_mentions,
    }


def _online_figures(online: OnlineSummary | None) -> dict[str, Any]:
    if not online:
        return {}
    records = [r for r in online.records if r.error is None]
    using = [r for r in records if r.recall_calls]
    return {
        "probeQuestions": len(records),
        "probeErrors": online.errors,
        "probeCorrect": sum(r.correct for r in records),
        "probeStale": sum(r.stale for r in records),
        "probeRecalling": len(using),
        "probeRecalledUsed": sum(r.correct and r.recalled_expected for r in using),
    }


def _cache_figures(run: RunResult) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    what_if = run.what_if.anthropic_without_stub_breakpoint if run.what_if else None
    if what_if is not None:
        figures["whatIf.input"] = what_if.input_tokens
        figures["whatIf.read"] = what_if.read_tokens
        figures["whatIf.cost"] = what_if.cost
        figures["whatIf.firstInput"] = what_if.first_after_pass.input_tokens
        figures["whatIf.firstRead"] = what_if.first_after_pass.read_tokens
    for rule in RULES:
        cache = run.cache[rule]
        figures[f"{rule}.input"] = cache.input_tokens
        figures[f"{rule}.read"] = cache.read_tokens
        figures[f"{rule}.cost"] = cache.cost
        figures[f"{rule}.summariserCost"] = cache.summariser_cost
        figures[f"{rule}.summariserInput"] = cache.summariser_input_tokens
        figures[f"{rule}.summariserRead"] = cache.summariser_read_tokens
        figures[f"{rule}.firstInput"] = cache.first_after_pass.input_tokens
        figures[f"{rule}.firstRead"] = cache.first_after_pass.read_tokens
    return figures


def _recall_figures(recall: Recall) -> dict[str, Any]:
    figures: dict[str, Any] = {"cued": round(recall.cued.share * recall.cued.n)}
    for kind in KINDS:
        score = recall.kind(kind)
        figures[f"{kind}N"] = score.n
        figures[f"{kind}Hit1"] = round(score.hit1 * score.n)
        figures[f"{kind}Hit5"] = round(score.hit5 * score.n)
        figures[f"{kind}RR"] = score.mrr * score.n
    return figures


def _survival_figures(survival: Survival) -> dict[str, Any]:
    current, superseded = survival.current, survival.superseded
    return {
        "anchors": len(survival.present),
        "surviving": sum(survival.present.values()),
        "current": current.n,
        "currentSurviving": sum(current.present.values()),
        "superseded": superseded.n,
        "supersededShown": sum(p is not None for p in superseded.where.values()),
        "supersededAsCurrent": superseded.as_current,
    }


def pool(flats: Iterable[dict[str, Any]]) -> dict[str, Any]:
    pooled: dict[str, Any] = {}
    for figures in flats:
        for key, value in figures.items():
            if key == "backend":
                pooled[key] = value
            elif key == "recallOffered":
                pooled[key] = pooled.get(key, True) and value
            elif key in MAX_KEYS:
                pooled[key] = max(pooled.get(key, 0), value)
            else:
                pooled[key] = pooled.get(key, 0) + value
    return pooled


ScenarioSeed = tuple[str, int | None]
"""A scenario and a seed."""


def complete_cells(runs: Sequence[RunRecord]) -> tuple[list[RunResult], list[ScenarioSeed]]:
    """The completed runs of the scenario-seed cells that every arm completed, and the cells
    left out (some arm failed or did not run there), in run order.

    Pooled figures and ratios are taken over these runs only, so arms are compared on the same
    cells: pooling whatever each arm has would set one arm's two seeds against another's one.
    An arm that completed no run at all has nothing to compare: it does not empty every cell
    (``failed_arms`` names it).
    """
    arms = {r.backend for r in runs if isinstance(r, RunResult)}
    done: dict[ScenarioSeed, set[str]] = {}
    for run in runs:
        done.setdefault((run.scenario, run.seed), set())
        if isinstance(run, RunResult):
            done[(run.scenario, run.seed)].add(run.backend)
    left_out = [cell for cell, have in done.items() if not have or have != arms]
    kept = [r for r in runs if isinstance(r, RunResult) and (r.scenario, r.seed) not in left_out]
    return kept, left_out


def failed_arms(runs: Sequence[RunRecord]) -> list[str]:
    """Arms that completed no run (every one of theirs failed), in order."""
    done = {r.backend for r in runs if isinstance(r, RunResult)}
    return sorted({r.backend for r in runs} - done, key=order)


def cells_note(left_out: Sequence[ScenarioSeed], failed: Sequence[str] = ()) -> str:
    """One line naming the cells a pooled figure leaves out (and the arms that completed no
    run), or nothing."""
    parts = []
    if left_out:
        names = ", ".join(f"{scenario} seed {seed}" for scenario, seed in left_out)
        parts.append(f"Pooled over the cells every arm completed; left out: {names}.")
    if failed:
        parts.append(f"Completed no run: {', '.join(failed)}.")
    return " ".join(parts)


# ---- formatting ------------------------------------------------------------------------------


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def times(value: float) -> str:
    """A cost multiple, two decimals — three when two would read 1.00× for a value that is not
    exactly 1 (1.003× is over a 1.00× budget, and the table must not hide which side it is)."""
    text = f"{value:.2f}×"
    return f"{value:.3f}×" if text == "1.00×" and value != 1.0 else text


def money(value: float) -> str:
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def _recall_cell(f: dict[str, Any], kind: str) -> str:
    n = f.get(f"{kind}N", 0)
    if not n:
        return "n/a (nothing compacted)"
    cell = (
        f"{pct(f[kind + 'Hit1'], n)} / {pct(f[kind + 'Hit5'], n)} / "
        f"{f[kind + 'RR'] / n:.2f} (n={n})"
    )
    if not f.get("recallOffered"):
        return f"0 — tools not offered (log: {cell})"
    return cell


@dataclass(frozen=True, slots=True)
class Row:
    label: str
    cell: Callable[[dict[str, Any]], str]
    summary: bool = False


ONLINE_ROWS = [
    Row(
        "Handoff probe: exact answers (stale answers)",
        lambda f: (
            f"{f['probeCorrect']}/{f['probeQuestions']} = "
            f"{pct(f['probeCorrect'], f['probeQuestions'])} ({f['probeStale']})"
        ),
        True,
    ),
    Row(
        "Handoff probe: answers that used the recall tools; of those, answered from the recall",
        lambda f: (
            f"{pct(f['probeRecalling'], f['probeQuestions'])}; "
            f"{pct(f['probeRecalledUsed'], f['probeRecalling'])}"
        ),
        True,
    ),
    Row("Handoff probe: failed calls", lambda f: str(f["probeErrors"])),
]


def _recall_row(kind: str) -> Row:
    return Row(f"Recall hit@1 / hit@5 / MRR — {kind} query", lambda f: _recall_cell(f, kind), True)


def _cache_rows(name: str, summary: bool) -> list[Row]:
    return [
        Row(
            f"Cache-hit ratio — {name}",
            lambda f: pct(f[f"{name}.read"], f[f"{name}.input"]),
            summary,
        ),
        Row(
            f"First request after a pass: hit ratio — {name}",
            lambda f: pct(f[f"{name}.firstRead"], f[f"{name}.firstInput"]),
            summary,
        ),
        Row(
            f"Billed cost — {name} (summariser share)",
            lambda f: (
                f"{money(f[f'{name}.cost'])} "
                f"({pct(f[f'{name}.summariserCost'], f[f'{name}.cost'])})"
            ),
            summary,
        ),
    ]


FACT_ROWS: list[Row] = [
    Row(
        "Survival — current facts verbatim in the final request",
        lambda f: (
            f"{f['currentSurviving']}/{f['current']} = {pct(f['currentSurviving'], f['current'])}"
        ),
        True,
    ),
    Row(
        "Superseded values in the final request: shown / shown as current",
        lambda f: f"{f['supersededShown']} / {f['supersededAsCurrent']} of {f['superseded']}",
        True,
    ),
    *(_recall_row(kind) for kind in KINDS),
    Row(
        "Compacted facts the stub/state text names a working search term for",
        lambda f: f"{f['cued']}/{f['compacted']} = {pct(f['cued'], f['compacted'])}",
        True,
    ),
    Row(
        "Reachable (in the final request, or exact recall hit@5 with the tools offered)",
        lambda f: f"{f['reachable']}/{f['anchors']} = {pct(f['reachable'], f['anchors'])}",
        True,
    ),
    Row(
        "Superseded values leaked as current",
        lambda f: f"{f['leaks']} of {f['leakPairs']} ({f['leakingRequests']} requests)",
        True,
    ),
    Row(
        "Requests with a stale state (new value still verbatim)",
        lambda f: str(f["staleRequests"]),
    ),
    Row(
        "Requests where only stubs marking it replaced name an old value (history)",
        lambda f: str(f["stubMentions"]),
    ),
]

SAFETY_ROWS: list[Row] = [
    Row("Compaction passes", lambda f: str(f["passes"]), True),
    Row("Commits that grew the context", lambda f: str(f["growth"]), True),
    Row(
        "Passes per threshold crossing (max; crossings with > 1)",
        lambda f: f"{f['maxPerCrossing']} ({f['loops']})",
        True,
    ),
    Row("Pairing errors (requests)", lambda f: str(f["pairing"]), True),
    Row(
        "Index stubs / stability violations",
        lambda f: f"{f['stubs']} / {f['stubViolations']}",
        True,
    ),
]

DETAIL_ROWS: list[Row] = [
    Row(
        "What-if, anthropic without the breakpoint after the last stub: hit ratio / first "
        "request after a pass / cost",
        lambda f: (
            f"{pct(f['whatIf.read'], f['whatIf.input'])} / "
            f"{pct(f['whatIf.firstRead'], f['whatIf.firstInput'])} / {money(f['whatIf.cost'])}"
        ),
    ),
    Row("Events in the log", lambda f: f"{f['events']:,}"),
    Row("Conversation requests", lambda f: f"{f['requests']:,}"),
    Row("Requests over the context window", lambda f: str(f["overWindow"])),
    Row("Peak context (tokens)", lambda f: f"{f['peak']:,}"),
    Row(
        "Mean context right after a pass (tokens)",
        lambda f: f"{f['tokensAfterSum'] / f['passes']:,.0f}" if f["passes"] else "n/a",
    ),
    Row(
        "Regions larger than what they shadow (pass still shrank)",
        lambda f: str(f["regionGrowth"]),
    ),
    Row("Still over the threshold after a pre-step (warnings)", lambda f: str(f["warnings"])),
    Row("Requests rebuilt from the log ≠ requests sent", lambda f: str(f["mismatches"])),
    Row(
        "Summariser calls (per pass)",
        lambda f: (
            f"{f['summariserCalls']} ({f['summariserCalls'] / f['passes']:.1f})"
            if f["passes"]
            else str(f["summariserCalls"])
        ),
    ),
    Row(
        "Wall time per pass, mean / max",
        lambda f: (
            f"{f['passWallSum'] / f['passes']:.2f} s / {f['passWallMax']:.2f} s"
            if f["passes"]
            else "n/a"
        ),
    ),
    Row("Run wall time", lambda f: f"{f['wall']:.1f} s"),
]


def rows(rule: str, *, online: bool = False) -> list[Row]:
    """Every metric row, the headline rule's cache rows in the summary, the others after."""
    ordered = [rule, *(r for r in RULES if r != rule)]
    others = [row for name in ordered[1:] for row in _cache_rows(name, False)]
    return [
        *(ONLINE_ROWS if online else []),
        *FACT_ROWS,
        *_cache_rows(ordered[0], True),
        *SAFETY_ROWS,
        *others,
        *DETAIL_ROWS,
    ]


def table(columns: Sequence[tuple[str, dict[str, Any]]], selected: Sequence[Row]) -> str:
    head = "| metric | " + " | ".join(name for name, _ in columns) + " |"
    rule = "|---|" + "---|" * len(columns)
    body = []
    for row in selected:
        cells = []
        for _, figures in columns:
            try:
                cells.append(row.cell(figures))
            except (KeyError, ZeroDivisionError, TypeError):
                cells.append("—")
        body.append(f"| {row.label} | " + " | ".join(cells) + " |")
    return "\n".join([head, rule, *body])


# ---- configuration ---------------------------------------------------------------------------

SHOWN_SETTINGS = (
    "threshold_ratio",
    "retain_tokens",
    "low_watermark_ratio",
    "stub_region_ratio",
    "chunk_tokens",
    "stub_tokens",
    "state_max_tokens",
    "max_concurrency",
    "summarizer",
)
"""The ``[compaction]`` settings the configuration table names."""


def configuration_tables(meta: dict[str, Any], runs: Sequence[RunRecord]) -> list[str]:
    """Per scenario its spec digest, window and settings; per cache rule its prices."""
    lines = ["| scenario | spec digest | window | compaction settings |", "|---|---|---|---|"]
    seen = set()
    for run in runs:
        if run.scenario in seen or not isinstance(run, RunResult):
            continue
        seen.add(run.scenario)
        settings = ", ".join(f"{k}={v}" for k, v in run.settings.items() if k in SHOWN_SETTINGS)
        lines.append(f"| {run.scenario} | {run.spec_digest} | {run.window:,} | {settings} |")
    lines += [
        "",
        "| cache rule | model | input $/M | output $/M | read × | write × |",
        "|---|---|---|---|---|---|",
    ]
    for rule, price in meta.get("prices", {}).items():
        lines.append(
            f"| {rule} | {price.get('model')} | {price.get('input')} | {price.get('output')} | "
            f"{price.get('cache_read')} | {price.get('cache_write')} |"
        )
    return lines
