"""The headline tables: per scenario and arm, every seed side by side, and pooled rows — one
cache-independent table (passes, survival, reachability, recall), one table per cache rule
(cost, hit ratio, recallable ÷ basic), and the DeepSeek interval sensitivity."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dsh.bench.cache_rules import RULES
from dsh.bench.results import IntervalFigures, RunRecord, RunResult
from dsh.bench.tables import (
    KINDS,
    cells_note,
    complete_cells,
    failed_arms,
    flat,
    money,
    order,
    pct,
    pool,
    times,
)

Cell = Callable[[dict[str, Any]], str]

FIGURES: list[tuple[str, Cell]] = [
    ("passes", lambda f: str(f["passes"])),
    ("survival current", lambda f: pct(f["currentSurviving"], f["current"])),
    ("superseded shown as current", lambda f: f"{f['supersededAsCurrent']}/{f['superseded']}"),
    ("reachable", lambda f: pct(f["reachable"], f["anchors"])),
    *((f"{kind} hit@5", (lambda f, kind=kind: _hit5(f, kind))) for kind in KINDS),
    ("cued", lambda f: f"{f['cued']}/{f['compacted']}"),
]


def _hit5(f: dict[str, Any], kind: str) -> str:
    cell = pct(f[f"{kind}Hit5"], f[f"{kind}N"])
    return cell if f.get("recallOffered") else f"({cell})"


def _safe(cell: Cell, f: dict[str, Any] | None) -> str:
    if f is None or f.get("errors"):
        return "—"
    try:
        return cell(f)
    except (KeyError, ZeroDivisionError, TypeError):
        return "—"


class Grid:
    """Flat figures by (scenario, arm, seed), and pooled over the cells every arm completed."""

    def __init__(self, runs: Sequence[RunRecord]) -> None:
        self.runs = [r for r in runs if isinstance(r, RunResult)]
        self.complete, self.left_out = complete_cells(runs)
        self.scenarios = list(dict.fromkeys(r.scenario for r in self.runs))
        self.arms = sorted({r.backend for r in self.runs}, key=order)
        self.seeds = list(dict.fromkeys(r.seed for r in self.runs))

    def figures(self, scenario: str, arm: str, seed: object) -> dict[str, Any] | None:
        mine = [
            flat(r)
            for r in self.runs
            if r.scenario == scenario and r.backend == arm and r.seed == seed
        ]
        return pool(mine) if mine else None

    def pooled(self, arm: str) -> dict[str, Any] | None:
        """One arm over the complete cells (the same cells for every arm)."""
        mine = [flat(r) for r in self.complete if r.backend == arm]
        return pool(mine) if mine else None

    def per_seed(self, cell: Cell, scenario: str, arm: str) -> str:
        return " / ".join(_safe(cell, self.figures(scenario, arm, seed)) for seed in self.seeds)


def figures_table(grid: Grid) -> list[str]:
    seeds = " / ".join(f"s{s}" for s in grid.seeds)
    head = "| scenario | arm | " + " | ".join(name for name, _ in FIGURES) + " |"
    lines = [
        f"Cells are seed {seeds}; the last rows pool the scenario-seed cells every arm "
        "completed (the same cells for every arm, so pooled ratios compare like with like). "
        "Recall in "
        "parentheses: the arm does not offer the recall tools (what the log holds).",
        "",
        head,
        "|---|---|" + "---|" * len(FIGURES),
    ]
    for scenario in grid.scenarios:
        for arm in grid.arms:
            cells = [grid.per_seed(cell, scenario, arm) for _, cell in FIGURES]
            lines.append(f"| {scenario} | {arm} | " + " | ".join(cells) + " |")
    for arm in grid.arms:
        pooled = grid.pooled(arm)
        cells = [_safe(cell, pooled) for _, cell in FIGURES]
        lines.append(f"| **all** | {arm} | " + " | ".join(cells) + " |")
    return lines


CONTROL = "basic+recall"
"""The control arm: basic with the recall tools. Its ratio to basic is what the tools alone
(about 300 tokens on every request, and the earlier threshold crossings they cause) do to a
cell — the spread a recallable ratio near 1.00× should be read against."""


def _ratio(grid: Grid, rule: str, scenario: str | None, seed: object, arm: str) -> str:
    """One cell's ratio, or (no scenario) the pooled one over the complete cells."""
    if scenario is None:
        basic, other = grid.pooled("basic"), grid.pooled(arm)
    else:
        basic, other = grid.figures(scenario, "basic", seed), grid.figures(scenario, arm, seed)
    if not basic or not other or not basic.get(f"{rule}.cost"):
        return "—"
    return times(other[f"{rule}.cost"] / basic[f"{rule}.cost"])


def cost_table(grid: Grid, rule: str) -> list[str]:
    def cell(f: dict[str, Any]) -> str:
        return f"{money(f[f'{rule}.cost'])} ({pct(f[f'{rule}.read'], f[f'{rule}.input'])})"

    ratios = ["recallable", *([CONTROL] if CONTROL in grid.arms else [])]
    lines = [
        "| scenario | "
        + " | ".join(grid.arms)
        + "".join(f" | {arm} ÷ basic" for arm in ratios)
        + " |",
        "|---|" + "---|" * (len(grid.arms) + len(ratios)),
    ]
    for scenario in grid.scenarios:
        cells = [grid.per_seed(cell, scenario, arm) for arm in grid.arms]
        cells += [
            " / ".join(_ratio(grid, rule, scenario, seed, arm) for seed in grid.seeds)
            for arm in ratios
        ]
        lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    pooled = [_safe(cell, grid.pooled(arm)) for arm in grid.arms]
    pooled += [_ratio(grid, rule, None, None, arm) for arm in ratios]
    lines.append("| **all** | " + " | ".join(pooled) + " |")
    return lines


def sensitivity_table(grid: Grid) -> list[str]:
    """Pooled DeepSeek figures for each interval of rule (c)."""
    names = list(dict.fromkeys(k for r in grid.runs for k in _intervals(r)))
    names.sort(key=lambda n: -1 if n == "off" else int(n))
    lines = [
        "| arm | " + " | ".join(f"interval {n}" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for arm in grid.arms:
        cells = []
        for name in names:
            found = [
                _intervals(r)[name] for r in grid.complete if r.backend == arm and _intervals(r)
            ]
            read = sum(f.read_tokens for f in found)
            total = sum(f.input_tokens for f in found)
            cells.append(f"{money(sum(f.cost for f in found))} ({pct(read, total)})")
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    return lines


def _intervals(run: RunResult) -> dict[str, IntervalFigures]:
    return run.sensitivity.deepseek_interval if run.sensitivity is not None else {}


def headline(runs: Sequence[RunRecord], rule: str) -> list[str]:
    """The headline section (markdown lines)."""
    grid = Grid(runs)
    lines = ["## Headline", "", *figures_table(grid)]
    note = cells_note(grid.left_out, failed_arms(runs))
    if note:
        lines += ["", note]
    control = (
        f" {CONTROL} ÷ basic is the control: what the recall tools alone (and the earlier"
        " threshold crossings they cause) do to a cell."
        if CONTROL in grid.arms
        else ""
    )
    for name in [rule, *(r for r in RULES if r != rule)]:
        lines += [
            "",
            f"### Billed cost (cache-hit ratio) — {name}",
            "",
            "Cells are seed " + " / ".join(f"s{s}" for s in grid.seeds) + "." + control,
            "",
            *cost_table(grid, name),
        ]
    lines += [
        "",
        "### DeepSeek: sensitivity to the fixed-interval rule (undocumented interval)",
        "",
        "Billed cost (cache-hit ratio), pooled over the cells every arm completed.",
        "",
        *sensitivity_table(grid),
    ]
    return lines
