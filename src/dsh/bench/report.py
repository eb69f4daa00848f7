"""``report.md`` and ``results.json`` of a bench run directory.

A run directory holds ``meta.json`` (seeds, versions, configuration) and one ``runs/*.json`` per
(scenario, arm, seed). ``write_report`` reads them and writes:

* ``results.json`` — meta, every run, and the per-arm summary;
* ``report.md`` — the headline tables (every seed side by side, per cache rule), the pooled
  summary, the verdict, a table per scenario and seed, the plots, the configuration and the
  method notes (``dsh.bench.method``, written from the run's own settings);
* ``plots/*.png`` (``dsh.bench.plots``).
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from dsh.bench.cache_rules import RULES
from dsh.bench.headline import headline
from dsh.bench.method import method_notes
from dsh.bench.plots import write_plots
from dsh.bench.tables import flat, order, pool, rows, table
from dsh.bench.verdict import verdict


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
    position = {name: i for i, name in enumerate(meta.get("scenarioOrder", []))}
    seeds = {seed: i for i, seed in enumerate(meta.get("seeds", []))}
    runs.sort(
        key=lambda r: (
            position.get(r["scenario"], len(position)),
            r["scenario"],
            seeds.get(r.get("seed"), len(seeds)),
            order(r["backend"]),
        )
    )
    return meta, runs


def write_report(directory: Path, *, rule: str | None = None) -> Path:
    """Write ``report.md``, ``results.json`` and the plots for a run directory."""
    meta, runs = load_run_dir(directory)
    rule = rule or meta.get("headline", "deepseek")
    if rule not in RULES:
        rule = "deepseek"
    arms = sorted({r["backend"] for r in runs}, key=order)
    pooled = {b: pool(flat(r) for r in runs if r["backend"] == b) for b in arms}
    plots, skipped = write_plots(directory, runs, rule)
    all_rows = rows(rule, online=any(r.get("online") for r in runs))
    lines = [f"# dsh bench — {meta.get('runId', directory.name)}", ""]
    lines += _preamble(meta, rule)
    lines += ["", *headline(runs, rule)]
    lines += ["", "## Summary (every scenario and seed pooled)", ""]
    lines.append(table([(b, pooled[b]) for b in arms], [r for r in all_rows if r.summary]))
    lines += ["", "### Verdict: recallable against basic", ""]
    lines.append(
        verdict(pooled.get("basic"), pooled.get("recallable"), rule, pooled.get("basic+recall"))
    )
    for scenario in dict.fromkeys(r["scenario"] for r in runs):
        lines += _scenario_section(meta, [r for r in runs if r["scenario"] == scenario], rule)
        for name in (f"plots/context-{scenario}.png", f"plots/cache-{scenario}.png"):
            if name in plots:
                lines += ["", f"![{name}]({name})"]
    lines += ["", "## Plots across scenarios", ""]
    if skipped:
        lines.append(f"Plots skipped: {skipped}.")
    for name in ("plots/cost.png", "plots/recall.png"):
        if name in plots:
            lines += [f"![{name}]({name})", ""]
    lines += ["", "## Configuration and method", "", *_configuration(meta, runs)]
    lines += ["", "Method notes:", "", *(f"- {note}" for note in method_notes(meta))]
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


def _scenario_section(meta: dict[str, Any], mine: Sequence[dict[str, Any]], rule: str) -> list[str]:
    """One scenario: its description, then a table per seed with its verdict."""
    scenario = mine[0]["scenario"]
    lines = ["", f"## Scenario `{scenario}`", ""]
    described: dict[str, Any] = next(
        (s for s in meta.get("scenarios", []) if s.get("name") == scenario), {}
    )
    if described.get("description"):
        lines += [described["description"], ""]
    all_rows = rows(rule, online=any(r.get("online") for r in mine))
    for seed in dict.fromkeys(r.get("seed") for r in mine):
        runs = sorted((r for r in mine if r.get("seed") == seed), key=lambda r: order(r["backend"]))
        first = next((r for r in runs if "counts" in r), runs[0])
        lines += [f"### Seed {seed}", ""]
        if "window" in first:
            lines += [
                f"Window {first['window']:,} tokens, threshold {first['threshold']:,}; "
                f"{first['counts']['turns']} turns, {len(first['survival']['present'])} planted "
                "facts.",
                "",
            ]
        for run in runs:
            if run.get("error"):
                lines.append(f"> **{run['backend']} did not complete:** {run['error']}")
        flats = {r["backend"]: flat(r) for r in runs if "counts" in r}
        if flats:
            lines += [table(list(flats.items()), all_rows), ""]
            if "basic" in flats and "recallable" in flats:
                found = verdict(
                    flats["basic"], flats["recallable"], rule, flats.get("basic+recall")
                )
                lines += [found, ""]
    return lines


def _preamble(meta: dict[str, Any], rule: str) -> list[str]:
    v = meta.get("versions", {})
    mode = meta.get("mode", "offline")
    lines: list[str] = [
        f"- Seeds: **{', '.join(str(x) for x in meta.get('seeds', [meta.get('seed', '?')]))}**; "
        f"created {meta.get('created', '?')}; "
        f"arms: {', '.join(meta.get('backends', []))}; "
        f"scenarios: {', '.join(meta.get('scenarioOrder', []))}.",
        f"- Versions: dsh {v.get('dsh', '?')} (git {v.get('git', 'unknown')}), "
        f"Python {v.get('python', '?')}, msgspec {v.get('msgspec', '?')}, "
        f"matplotlib {v.get('matplotlib', '?')}; {v.get('platform', '')}.",
    ]
    lines.append(f"- Mode: {mode} (what was real and what was simulated: see the method notes).")
    price = meta.get("prices", {}).get(rule, {})
    lines.append(
        f"- Headline cache rule: **{rule}** (US$/M tokens: input {price.get('input')}, output "
        f"{price.get('output')}, cache read ×{price.get('cache_read')}, "
        f"cache write ×{price.get('cache_write')}). "
        f"All {len(RULES)} rules are in the headline and in each scenario table."
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
    return lines
