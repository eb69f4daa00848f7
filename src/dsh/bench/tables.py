"""The report's figures and tables: each run flattened to sums that pool across scenarios and
seeds (``flat``, ``pool``), the metric rows of the per-scenario tables (``rows``), and the
markdown table they make (``table``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dsh.bench.cache_rules import RULES

BACKEND_ORDER = ("off", "basic", "basic+recall", "recallable")
MAX_KEYS = ("maxPerCrossing", "peak", "passWallMax")
KINDS = ("exact", "partial", "paraphrase")


def order(backend: str) -> int:
    return BACKEND_ORDER.index(backend) if backend in BACKEND_ORDER else len(BACKEND_ORDER)


# ---- flat figures ----------------------------------------------------------------------------


def flat(run: dict[str, Any]) -> dict[str, Any]:
    """The figures of one run as sums that pool across scenarios."""
    if run.get("error") and "counts" not in run:
        return {
            "errors": 1,
            "backend": run["backend"],
            "recallOffered": run["backend"] in ("basic+recall", "recallable"),
        }
    safety, recall = run["safety"], run["recall"]
    passes = run["passes"]
    figures: dict[str, Any] = {
        "backend": run["backend"],
        "events": run["counts"]["events"],
        "requests": run["counts"]["requests"],
        "passes": len(passes),
        "crossings": safety["crossings"],
        "maxPerCrossing": safety["maxPassesPerCrossing"],
        "loops": safety["loops"],
        "growth": safety["growthCommits"],
        "regionGrowth": safety["regionGrowth"],
        "warnings": safety["warnings"],
        "pairing": safety["pairingErrors"],
        "mismatches": safety["logMismatches"],
        "overWindow": safety["overWindow"],
        "peak": safety["peakContext"],
        "anchors": len(run["survival"]["present"]),
        "surviving": sum(run["survival"]["present"].values()),
        "compacted": recall["population"],
        "recallOffered": recall["offered"],
        **_recall_figures(recall),
        **_survival_figures(run["survival"]),
        "reachable": len(run["reachable"]["anchors"]),
        "reachableCurrent": run["reachable"].get("current", 0),
        "leakPairs": run["superseded"]["pairs"],
        "leaks": run["superseded"]["leaks"],
        "leakingRequests": run["superseded"]["leakingRequests"],
        "staleRequests": run["superseded"]["staleRequests"],
        "stubMentions": run["superseded"]["stubMentions"],
        "stubs": run["stability"]["stubs"],
        "stubViolations": run["stability"]["violations"],
        "summariserCalls": run["counts"]["summariserCalls"],
        "wall": run["time"]["wallS"],
        "passWallSum": sum(p["wall_s"] for p in passes),
        "passWallMax": run["time"]["passWallMaxS"],
        "tokensAfterSum": sum(p["tokens_after"] for p in passes),
        "errors": 1 if run.get("error") else 0,
    }
    figures.update(_online_figures(run.get("online")))
    figures.update(_cache_figures(run))
    return figures


def _online_figures(online: dict[str, Any] | None) -> dict[str, Any]:
    if not online:
        return {}
    records = [r for r in online["records"] if r["error"] is None]
    using = [r for r in records if r["recallCalls"]]
    return {
        "probeQuestions": len(records),
        "probeErrors": online["errors"],
        "probeCorrect": sum(r["correct"] for r in records),
        "probeStale": sum(r["stale"] for r in records),
        "probeRecalling": len(using),
        "probeRecalledUsed": sum(r["correct"] and r["recalledExpected"] for r in using),
    }


def _cache_figures(run: dict[str, Any]) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    what_if = run.get("whatIf", {}).get("anthropicStubBreakpoint")
    if what_if is not None:
        figures["whatIf.input"] = what_if["inputTokens"]
        figures["whatIf.read"] = what_if["readTokens"]
        figures["whatIf.cost"] = what_if["cost"]
        figures["whatIf.firstInput"] = what_if["firstAfterPass"]["inputTokens"]
        figures["whatIf.firstRead"] = what_if["firstAfterPass"]["readTokens"]
    for rule in RULES:
        cache = run["cache"][rule]
        figures[f"{rule}.input"] = cache["inputTokens"]
        figures[f"{rule}.read"] = cache["readTokens"]
        figures[f"{rule}.cost"] = cache["cost"]
        figures[f"{rule}.summariserCost"] = cache["summariserCost"]
        figures[f"{rule}.summariserInput"] = cache["summariserInputTokens"]
        figures[f"{rule}.summariserRead"] = cache.get("summariserReadTokens", 0)
        figures[f"{rule}.firstInput"] = cache["firstAfterPass"]["inputTokens"]
        figures[f"{rule}.firstRead"] = cache["firstAfterPass"]["readTokens"]
    return figures


def _recall_figures(recall: dict[str, Any]) -> dict[str, Any]:
    figures: dict[str, Any] = {"cued": round(recall["cued"]["share"] * recall["cued"]["n"])}
    for kind in KINDS:
        score = recall[kind]
        figures[f"{kind}N"] = score["n"]
        figures[f"{kind}Hit1"] = round(score["hit1"] * score["n"])
        figures[f"{kind}Hit5"] = round(score["hit5"] * score["n"])
        figures[f"{kind}RR"] = score["mrr"] * score["n"]
    return figures


def _survival_figures(survival: dict[str, Any]) -> dict[str, Any]:
    current, superseded = survival["current"], survival["superseded"]
    return {
        "current": current["n"],
        "currentSurviving": sum(current["present"].values()),
        "superseded": superseded["n"],
        "supersededShown": sum(p is not None for p in superseded["where"].values()),
        "supersededAsCurrent": superseded["asCurrent"],
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


# ---- formatting ------------------------------------------------------------------------------


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None


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
        "What-if, anthropic with a 3rd breakpoint after the last stub: hit ratio / first "
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
