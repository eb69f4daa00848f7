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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsh.bench.cache_rules import RULES
from dsh.bench.headline import headline
from dsh.bench.method import method_notes
from dsh.bench.plots import write_plots
from dsh.bench.results import FailedRun, RunRecord, RunResult, as_json, as_record
from dsh.bench.tables import (
    cells_note,
    complete_cells,
    configuration_tables,
    failed_arms,
    flat,
    order,
    pool,
    rows,
    table,
)
from dsh.bench.verdict import verdict
from dsh.errors import ConfigError

NO_RUN_FILE = "no run file: the run was stopped before this one finished, or its file is gone"


def load_run_dir(directory: Path) -> tuple[dict[str, Any], list[RunRecord]]:
    """``meta.json`` and every ``runs/*.json`` as its typed record, in report order (scenario
    order of the run, then seed order, then arm). A run ``meta.json`` plans (scenario × arm ×
    seed) that has no file is a ``FailedRun`` saying so, so the report names it and pooled
    figures leave its cell out."""
    meta_path = directory / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    files = sorted((directory / "runs").glob("*.json"))
    if not files:
        raise ConfigError(
            f"{directory / 'runs'} holds no run file: nothing to report (was the run stopped "
            "before its first run finished?)"
        )
    runs = [_read_run(path) for path in files]
    # A run that failed before its scenario loaded names the scenario as it was given.
    named = {s.get("source"): s.get("name") for s in meta.get("scenarios", [])}
    present = {(named.get(r.scenario, r.scenario), r.backend, r.seed) for r in runs}
    runs += [
        FailedRun(scenario=scenario, backend=backend, seed=seed, error=NO_RUN_FILE)
        for scenario in meta.get("scenarioOrder", [])
        for seed in meta.get("seeds", [])
        for backend in meta.get("backends", [])
        if (scenario, backend, seed) not in present
    ]
    position = {name: i for i, name in enumerate(meta.get("scenarioOrder", []))}
    seeds = {seed: i for i, seed in enumerate(meta.get("seeds", []))}
    runs.sort(
        key=lambda r: (
            position.get(r.scenario, len(position)),
            r.scenario,
            seeds.get(r.seed, len(seeds)),
            order(r.backend),
        )
    )
    return meta, runs


def _read_run(path: Path) -> RunRecord:
    """One ``runs/*.json`` as its record; a file that is not one is a one-line error."""
    try:
        return as_record(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as exc:  # msgspec.ValidationError is a ValueError
        raise ConfigError(f"{path}: not a bench run record: {exc}") from exc


def write_report(directory: Path, *, rule: str | None = None) -> Path:
    """Write ``report.md``, ``results.json`` and the plots for a run directory."""
    meta, runs = load_run_dir(directory)
    rule = rule or meta.get("headline", "deepseek")
    if rule not in RULES:
        rule = "deepseek"
    arms = sorted({r.backend for r in runs}, key=order)
    complete, left_out = complete_cells(runs)
    pooled = {b: pool(flat(r) for r in complete if r.backend == b) for b in arms}
    plots, skipped = write_plots(directory, runs, rule)
    lines = [f"# dsh bench — {meta.get('runId', directory.name)}", ""]
    lines += _preamble(meta, rule)
    lines += [
        "",
        *headline(runs, rule),
        *_summary(runs, pooled, rule, cells_note(left_out, failed_arms(runs))),
    ]
    for scenario in dict.fromkeys(r.scenario for r in runs):
        lines += _scenario_section(meta, [r for r in runs if r.scenario == scenario], rule)
        for name in (f"plots/context-{scenario}.png", f"plots/cache-{scenario}.png"):
            if name in plots:
                lines += ["", f"![{name}]({name})"]
    lines += ["", "## Plots across scenarios", ""]
    if skipped:
        lines.append(f"Plots skipped: {skipped}.")
    for name in ("plots/cost.png", "plots/recall.png"):
        if name in plots:
            lines += [f"![{name}]({name})", ""]
    lines += ["", "## Configuration and method", "", *configuration_tables(meta, runs)]
    lines += ["", "Method notes:", "", *(f"- {note}" for note in method_notes(meta))]
    report = directory / "report.md"
    report.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    results = {
        "meta": meta,
        "headline": rule,
        "summary": pooled,
        "runs": [as_json(r) for r in runs],
        "plots": plots,
        "plotsSkipped": skipped,
    }
    (directory / "results.json").write_text(
        json.dumps(results, indent=1, sort_keys=True), encoding="utf-8"
    )
    return report


def _online(runs: Sequence[RunRecord]) -> bool:
    return any(isinstance(r, RunResult) and r.online for r in runs)


def _summary(
    runs: Sequence[RunRecord], pooled: dict[str, dict[str, Any]], rule: str, note: str
) -> list[str]:
    """The pooled summary table and the pooled verdict."""
    summary_rows = [r for r in rows(rule, online=_online(runs)) if r.summary]
    return [
        "",
        "## Summary (the scenario-seed cells every arm completed, pooled)",
        "",
        *([note, ""] if note else []),
        table(list(pooled.items()), summary_rows),
        "",
        "### Verdict: recallable against basic",
        "",
        verdict(pooled.get("basic"), pooled.get("recallable"), rule, pooled.get("basic+recall")),
    ]


def _scenario_section(meta: dict[str, Any], mine: Sequence[RunRecord], rule: str) -> list[str]:
    """One scenario: its description, then a table per seed with its verdict."""
    scenario = mine[0].scenario
    lines = ["", f"## Scenario `{scenario}`", ""]
    described: dict[str, Any] = next(
        (s for s in meta.get("scenarios", []) if s.get("name") == scenario), {}
    )
    if described.get("description"):
        lines += [described["description"], ""]
    all_rows = rows(rule, online=_online(mine))
    for seed in dict.fromkeys(r.seed for r in mine):
        runs = sorted((r for r in mine if r.seed == seed), key=lambda r: order(r.backend))
        done = [r for r in runs if isinstance(r, RunResult)]
        lines += [f"### Seed {seed}", ""]
        if done:
            first = done[0]
            lines += [
                f"Window {first.window:,} tokens, threshold {first.threshold:,}; "
                f"{first.counts.turns} turns, {len(first.survival.present)} planted facts.",
                "",
            ]
        lines += [f"> **{r.backend} did not complete:** {r.error}" for r in runs if r.error]
        flats = {r.backend: flat(r) for r in done}
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
        f"scenarios: {', '.join(meta.get('scenarioOrder', []))}"
        f"{_overrides_note(meta.get('compactionOverrides') or {})}.",
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


def _overrides_note(overrides: dict[str, Any]) -> str:
    """The ``--compaction`` overrides of a run, for its header line ('' when none)."""
    if not overrides:
        return ""
    items = ", ".join(f"{key}={value}" for key, value in sorted(overrides.items()))
    return f"; compaction overrides (every scenario, every arm): {items}"
