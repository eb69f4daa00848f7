"""``report.md``, ``results.json`` and the PNG plots of a bench run directory.

A run directory holds ``meta.json`` (seed, versions, configuration) and one ``runs/*.json`` per
(scenario, backend). ``write_report`` reads them and writes:

* ``results.json`` — meta, every run, and the per-backend summary;
* ``report.md`` — the summary table (backends side by side), the recallable-vs-basic verdict, a
  table per scenario, the plots, and the configuration;
* ``plots/*.png`` — context size over steps (the saw-tooth) and cumulative cache-hit ratio over
  steps per scenario, billed cost per backend, recall hit@k per backend. matplotlib is imported
  lazily; without it the report says so and skips the plots.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from dsh.bench.cache_rules import RULES

COST_BUDGET = 1.25
"""Recallable should beat basic on recall at no more than this multiple of basic's cost."""
BACKEND_ORDER = ("off", "basic", "recallable")
MAX_KEYS = ("maxPerCrossing", "peak", "passWallMax")


# ---- flat figures ----------------------------------------------------------------------------


def flat(run: dict[str, Any]) -> dict[str, Any]:
    """The figures of one run as sums that pool across scenarios."""
    if run.get("error") and "counts" not in run:
        return {
            "errors": 1,
            "backend": run["backend"],
            "recallOffered": run["backend"] == "recallable",
        }
    safety, recall = run["safety"], run["recall"]
    exact, partial = recall["exact"], recall["partial"]
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
        "exactHit1": round(exact["hit1"] * exact["n"]),
        "exactHit5": round(exact["hit5"] * exact["n"]),
        "exactRR": exact["mrr"] * exact["n"],
        "partialHit1": round(partial["hit1"] * partial["n"]),
        "partialHit5": round(partial["hit5"] * partial["n"]),
        "partialRR": partial["mrr"] * partial["n"],
        "reachable": len(run["reachable"]["anchors"]),
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
    online = run.get("online")
    if online:
        records = [r for r in online["records"] if r["error"] is None]
        using = [r for r in records if r["recallCalls"]]
        figures["probeQuestions"] = len(records)
        figures["probeErrors"] = online["errors"]
        figures["probeCorrect"] = sum(r["correct"] for r in records)
        figures["probeStale"] = sum(r["stale"] for r in records)
        figures["probeRecalling"] = len(using)
        figures["probeRecalledUsed"] = sum(r["correct"] and r["recalledExpected"] for r in using)
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
        figures[f"{rule}.firstInput"] = cache["firstAfterPass"]["inputTokens"]
        figures[f"{rule}.firstRead"] = cache["firstAfterPass"]["readTokens"]
    return figures


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
    n = f.get("compacted", 0)
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


def rows(rule: str, *, online: bool = False) -> list[Row]:
    def cache_rows(name: str, summary: bool) -> list[Row]:
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

    ordered = [rule, *(r for r in RULES if r != rule)]
    return [
        *(ONLINE_ROWS if online else []),
        Row(
            "Survival (anchors verbatim in the final request)",
            lambda f: f"{f['surviving']}/{f['anchors']} = {pct(f['surviving'], f['anchors'])}",
            True,
        ),
        Row("Recall hit@1 / hit@5 / MRR — exact query", lambda f: _recall_cell(f, "exact"), True),
        Row(
            "Recall hit@1 / hit@5 / MRR — partial query", lambda f: _recall_cell(f, "partial"), True
        ),
        Row(
            "Reachable (in context, or recall hit@5 with the tools offered)",
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
            "Requests where only a stub names an old value (history)",
            lambda f: str(f["stubMentions"]),
        ),
        *cache_rows(ordered[0], True),
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
        *cache_rows(ordered[1], False),
        *cache_rows(ordered[2], False),
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


# ---- verdict ---------------------------------------------------------------------------------


def verdict(basic: dict[str, Any] | None, recallable: dict[str, Any] | None, rule: str) -> str:
    """Does recallable beat basic on recall at no more than 1.25× basic's cost? Plainly."""
    if not basic or not recallable or basic.get("errors") or recallable.get("errors"):
        return "No verdict: basic and recallable did not both complete."
    reach_b, reach_r = (
        ratio(basic["reachable"], basic["anchors"]),
        ratio(recallable["reachable"], recallable["anchors"]),
    )
    cost_b, cost_r = basic[f"{rule}.cost"], recallable[f"{rule}.cost"]
    times = cost_r / cost_b if cost_b else float("inf")
    better = (reach_r or 0) > (reach_b or 0)
    lines = [
        f"- Reachable facts: recallable {pct(recallable['reachable'], recallable['anchors'])}, "
        f"basic {pct(basic['reachable'], basic['anchors'])}; survival in the final request: "
        f"recallable {pct(recallable['surviving'], recallable['anchors'])}, basic "
        f"{pct(basic['surviving'], basic['anchors'])}.",
        f"- Billed cost ({rule}): recallable {money(cost_r)} = {times:.2f}× "
        f"basic's {money(cost_b)}.",
    ]
    if better and times <= COST_BUDGET:
        head = (
            f"**Recallable beats basic on recall at {times:.2f}× basic's cost "
            f"(budget {COST_BUDGET}×).**"
        )
        return "\n".join([head, *lines])
    if not better:
        head = "**Recallable does not beat basic on recall here.**"
    else:
        head = (
            f"**Recallable beats basic on recall, but not within {COST_BUDGET}× basic's cost: it "
            f"costs {times:.2f}×.**"
        )
    why = []
    summ_b, summ_r = basic[f"{rule}.summariserCost"], recallable[f"{rule}.summariserCost"]
    if summ_r > summ_b:
        why.append(
            f"summariser calls cost {money(summ_r)} against {money(summ_b)} "
            f"({recallable['summariserCalls']} calls against {basic['summariserCalls']}; "
            "every stub "
            "and state call re-sends its slice without the conversation's tools prefix, so none of "
            "it is a cache hit, while basic's one call per pass is a prefix of the conversation)"
        )
    if recallable["passes"] > basic["passes"]:
        why.append(
            f"{recallable['passes']} passes against {basic['passes']}: the stubs stay, so the "
            "context after a pass is larger "
            f"({recallable['tokensAfterSum'] / max(recallable['passes'], 1):,.0f} tokens against "
            f"{basic['tokensAfterSum'] / max(basic['passes'], 1):,.0f}) and the threshold comes "
            "back sooner"
        )
    if recallable["warnings"]:
        why.append(
            f"{recallable['warnings']} pre-steps ended still over the threshold: the frozen stub "
            "region plus the state and the retained tail reached the threshold, so later passes "
            "only nibble "
            "at the tail (a pass in almost every step)"
        )
    conv_r = recallable[f"{rule}.cost"] - summ_r
    conv_b = basic[f"{rule}.cost"] - summ_b
    if conv_r > conv_b:
        why.append(
            f"conversation requests cost {money(conv_r)} against {money(conv_b)} (more tokens per "
            "request: stubs, the recall tools and their prompt section)"
        )
    first_r = ratio(recallable[f"{rule}.firstRead"], recallable[f"{rule}.firstInput"])
    if first_r is not None and first_r < 0.05:
        why.append(
            f"under the {rule} rule the first request after a pass hits almost nothing even with "
            "frozen stubs (a saved unit must be a whole earlier request or reply, so a new state "
            "checkpoint after the stubs breaks every unit)"
            if rule == "deepseek"
            else f"the first request after a pass hits only {first_r:.0%} under the {rule} rule"
        )
    return "\n".join([head, *lines, *(f"- Why: {w}." for w in why)])


# ---- plots -----------------------------------------------------------------------------------


def write_plots(
    out: Path, runs: Sequence[dict[str, Any]], rule: str
) -> tuple[list[str], str | None]:
    """PNG plots; returns (file names relative to ``out``, reason when skipped)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not installed (add it to the project to get the PNG plots)"
    plots = out / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    colours = {"off": "#999999", "basic": "#1f77b4", "recallable": "#d62728"}
    ok = [r for r in runs if "counts" in r]
    scenarios = list(dict.fromkeys(r["scenario"] for r in ok))
    for scenario in scenarios:
        mine = sorted(
            (r for r in ok if r["scenario"] == scenario), key=lambda r: _order(r["backend"])
        )
        fig, ax = plt.subplots(figsize=(9, 4.2))
        window = mine[0]["window"]
        top = max(
            [window * 1.15]
            + [max(r["context"], default=0) * 1.05 for r in mine if r["backend"] != "off"]
        )
        for run in mine:
            style = "--" if run["backend"] == "off" else "-"
            ax.plot(
                run["context"],
                style,
                label=run["backend"],
                color=colours.get(run["backend"]),
                linewidth=1.2,
            )
        ax.axhline(window, color="black", linewidth=0.8, label=f"window {window:,}")
        ax.axhline(
            mine[0]["threshold"], color="black", linestyle=":", linewidth=0.8, label="threshold"
        )
        ax.set_ylim(0, top)
        ax.set_xlabel("conversation request (step)")
        ax.set_ylabel("context size (tokens)")
        ax.set_title(f"{scenario}: context size over steps (off is clipped)")
        ax.legend(loc="upper left", fontsize=8)
        names.append(_save(fig, plots, f"context-{scenario}.png"))
        fig, ax = plt.subplots(figsize=(9, 4.2))
        for run in mine:
            ax.plot(
                run["cache"][rule]["cumulative"],
                label=run["backend"],
                color=colours.get(run["backend"]),
            )
        ax.set_ylim(0, 1)
        ax.set_xlabel("conversation request (step)")
        ax.set_ylabel(f"cumulative cache-hit ratio ({rule})")
        ax.set_title(f"{scenario}: cumulative cache-hit ratio, summariser calls included")
        ax.legend(loc="lower right", fontsize=8)
        names.append(_save(fig, plots, f"cache-{scenario}.png"))
    backends = sorted({r["backend"] for r in ok}, key=_order)
    width = 0.8 / max(len(backends), 1)
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for i, backend in enumerate(backends):
        costs = [
            next(
                (
                    r["cache"][rule]["cost"]
                    for r in ok
                    if r["scenario"] == s and r["backend"] == backend
                ),
                0.0,
            )
            for s in scenarios
        ]
        ax.bar(
            [x + i * width for x in range(len(scenarios))],
            costs,
            width,
            label=backend,
            color=colours.get(backend),
        )
    ax.set_xticks(
        [x + width * (len(backends) - 1) / 2 for x in range(len(scenarios))], scenarios, fontsize=8
    )
    ax.set_yscale("log")
    ax.set_ylabel(f"billed cost, US$ ({rule}, log scale)")
    ax.set_title("Billed cost per backend (summariser calls included)")
    ax.legend(fontsize=8)
    names.append(_save(fig, plots, "cost.png"))
    fig, ax = plt.subplots(figsize=(9, 4.2))
    metrics = ("survival", "exact hit@1", "exact hit@5", "partial hit@5", "reachable")
    pooled = {b: pool(flat(r) for r in ok if r["backend"] == b) for b in backends}
    for i, backend in enumerate(backends):
        f = pooled[backend]
        offered = f.get("recallOffered", False)
        values = [
            ratio(f["surviving"], f["anchors"]) or 0,
            (ratio(f["exactHit1"], f["compacted"]) or 0) if offered else 0,
            (ratio(f["exactHit5"], f["compacted"]) or 0) if offered else 0,
            (ratio(f["partialHit5"], f["compacted"]) or 0) if offered else 0,
            ratio(f["reachable"], f["anchors"]) or 0,
        ]
        ax.bar(
            [x + i * width for x in range(len(metrics))],
            values,
            width,
            label=backend,
            color=colours.get(backend),
        )
    ax.set_xticks(
        [x + width * (len(backends) - 1) / 2 for x in range(len(metrics))], metrics, fontsize=8
    )
    ax.set_ylim(0, 1.05)
    ax.set_title(
        "Recall per backend, all scenarios (recall counts only where the tools are offered)"
    )
    ax.legend(fontsize=8)
    names.append(_save(fig, plots, "recall.png"))
    return names, None


def _save(fig: Any, folder: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(folder / name, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return f"plots/{name}"


def _order(backend: str) -> int:
    return BACKEND_ORDER.index(backend) if backend in BACKEND_ORDER else len(BACKEND_ORDER)


# ---- the report ------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    """Versions the report states: dsh, its git commit, Python, platform and key libraries."""
    found = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("dsh", "msgspec", "click", "matplotlib"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).parent,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).parent,
        )
        if commit.returncode == 0:
            found["git"] = commit.stdout.strip() + (
                ", modified tree" if dirty.stdout.strip() else ""
            )
    except (OSError, subprocess.SubprocessError):
        pass
    return found


def load_run_dir(directory: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    meta_path = directory / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    runs = [
        json.loads(p.read_text(encoding="utf-8"))
        for p in sorted((directory / "runs").glob("*.json"))
    ]
    order = {name: i for i, name in enumerate(meta.get("scenarioOrder", []))}
    runs.sort(
        key=lambda r: (order.get(r["scenario"], len(order)), r["scenario"], _order(r["backend"]))
    )
    return meta, runs


def write_report(directory: Path, *, rule: str | None = None) -> Path:
    """Write ``report.md``, ``results.json`` and the plots for a run directory."""
    meta, runs = load_run_dir(directory)
    rule = rule or meta.get("headline", "deepseek")
    if rule not in RULES:
        rule = "deepseek"
    backends = sorted({r["backend"] for r in runs}, key=_order)
    scenarios = list(dict.fromkeys(r["scenario"] for r in runs))
    pooled = {b: pool(flat(r) for r in runs if r["backend"] == b) for b in backends}
    plots, skipped = write_plots(directory, runs, rule)
    all_rows = rows(rule, online=any(r.get("online") for r in runs))
    lines = [f"# dsh bench — {meta.get('runId', directory.name)}", ""]
    lines += _preamble(meta, rule)
    lines += ["", "## Summary (all scenarios pooled)", ""]
    lines.append(table([(b, pooled[b]) for b in backends], [r for r in all_rows if r.summary]))
    lines += ["", "### Verdict: recallable against basic", ""]
    lines.append(verdict(pooled.get("basic"), pooled.get("recallable"), rule))
    for scenario in scenarios:
        mine = [r for r in runs if r["scenario"] == scenario]
        first = next((r for r in mine if "counts" in r), mine[0])
        lines += ["", f"## Scenario `{scenario}`", ""]
        described: dict[str, Any] = next(
            (s for s in meta.get("scenarios", []) if s.get("name") == scenario), {}
        )
        if described.get("description"):
            lines += [described["description"], ""]
        if "window" in first:
            lines.append(
                f"Window {first['window']:,} tokens, threshold {first['threshold']:,}; "
                f"{first['counts']['turns']} turns, "
                f"{len(first['survival']['present'])} planted facts."
            )
            lines.append("")
        errors = [r for r in mine if r.get("error")]
        for run in errors:
            lines.append(f"> **{run['backend']} did not complete:** {run['error']}")
        flats = [
            (r["backend"], flat(r))
            for r in sorted(mine, key=lambda r: _order(r["backend"]))
            if "counts" in r
        ]
        if flats:
            lines.append(table(flats, all_rows))
            basic = next((f for b, f in flats if b == "basic"), None)
            recallable = next((f for b, f in flats if b == "recallable"), None)
            if basic and recallable:
                lines += ["", verdict(basic, recallable, rule)]
        for name in (f"plots/context-{scenario}.png", f"plots/cache-{scenario}.png"):
            if name in plots:
                lines += ["", f"![{name}]({name})"]
    lines += ["", "## Plots across scenarios", ""]
    if skipped:
        lines.append(f"Plots skipped: {skipped}.")
    for name in ("plots/cost.png", "plots/recall.png"):
        if name in plots:
            lines += [f"![{name}]({name})", ""]
    lines += ["", "## Configuration and method", ""]
    lines += _configuration(meta, runs)
    report = directory / "report.md"
    report.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    results = {
        "meta": meta,
        "headline": rule,
        "summary": pooled,
        "runs": runs,
        "plots": plots,
        "plotsSkipped": skipped,
    }
    (directory / "results.json").write_text(
        json.dumps(results, indent=1, sort_keys=True), encoding="utf-8"
    )
    return report


def _preamble(meta: dict[str, Any], rule: str) -> list[str]:
    v = meta.get("versions", {})
    mode = meta.get("mode", "offline")
    lines = [
        f"- Seed: **{meta.get('seed', '?')}**; created {meta.get('created', '?')}; "
        f"backends: {', '.join(meta.get('backends', []))}; "
        f"scenarios: {', '.join(meta.get('scenarioOrder', []))}.",
        f"- Versions: dsh {v.get('dsh', '?')} (git {v.get('git', 'unknown')}), "
        f"Python {v.get('python', '?')}, msgspec {v.get('msgspec', '?')}, "
        f"matplotlib {v.get('matplotlib', '?')}; {v.get('platform', '')}.",
    ]
    if mode == "offline":
        lines.append(
            f"- Mode: offline — the model is `scripted` (its turns are scenario data), the "
            f"summariser is `extractive`, billed as the model call `ModelSummarizer` would make, "
            f"with a simulated latency of {meta.get('latencyMs', '?')} ms per call."
        )
    else:
        online = meta.get("online", {})
        lines.append(
            f"- Mode: online — summariser {online.get('provider')}:{online.get('model')}; handoff "
            f"probe with {online.get('questions')} questions after each pass."
        )
    price = meta.get("prices", {}).get(rule, {})
    lines.append(
        f"- Headline cache rule: **{rule}** (US$/M tokens: input {price.get('input')}, output "
        f"{price.get('output')}, cache read ×{price.get('cache_read')}, "
        f"cache write ×{price.get('cache_write')}). "
        "All three rules are in each scenario table."
    )
    return lines


def _configuration(meta: dict[str, Any], runs: Sequence[dict[str, Any]]) -> list[str]:
    lines = ["| scenario | spec digest | window | compaction settings |", "|---|---|---|---|"]
    seen = set()
    for run in runs:
        if run["scenario"] in seen or "settings" not in run:
            continue
        seen.add(run["scenario"])
        settings = ", ".join(
            f"{k}={v}"
            for k, v in run["settings"].items()
            if k
            in (
                "threshold_ratio",
                "retain_tokens",
                "chunk_tokens",
                "stub_tokens",
                "state_max_tokens",
                "max_concurrency",
                "summarizer",
            )
        )
        lines.append(
            f"| {run['scenario']} | {run['specDigest']} | {run['window']:,} | {settings} |"
        )
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
    lines += ["", *METHOD]
    return lines


METHOD = [
    "Method notes:",
    "",
    "- Requests are segmented in provider order (tools → system → one segment per message) and "
    "priced with dsh's token heuristic (about 4 characters a token). A message that differs at "
    "all misses from its first byte. DeepSeek: a hit is the longest saved unit (a whole earlier "
    "request, or request + reply) that is a prefix. OpenAI: floor(LCP/128)×128 for prompts of "
    "≥ 1024 tokens. Anthropic: dsh's two breakpoints (system, last message), 20-block lookback, "
    "1024-token minimum, writes 1.25×, reads 0.1×. Caches start cold and never expire.",
    "- Summariser calls are simulated: the extractive summariser writes the text, and the bench "
    "bills the exact request `ModelSummarizer` would send for the same task (and the text as its "
    "output). Probe calls (online mode) are excluded from cost and cache figures.",
    "- Survival: the anchor appears verbatim anywhere in the final request (system, text, "
    "reasoning, tool arguments and results). Recall: over the facts no longer verbatim in an "
    "original message of the final request, `history_search` with the exact anchor (and with the "
    "scenario's partial query), then `history_read` of each hit in order; rank of the first page "
    "holding the anchor, within 10 hits. Reachable: in the final request, or recall hit@5 where "
    "the backend offers the recall tools (only recallable does, as in `build_agent`).",
    "- Superseded leak: after the new value first appears, a state checkpoint or basic summary "
    "names the old value while no original message of that request shows the new one. A state "
    "written before the change, with the change still verbatim in the tail, is counted as stale.",
    "- Commits that grew the context: passes whose tokens after ≥ tokens before. Passes per "
    "crossing: passes run by one pre-step that found the context over the threshold.",
]
