"""The report's PNG plots: per scenario (first seed) the context size over steps (the
saw-tooth) and the cumulative cache-hit ratio; across scenarios the billed cost per arm and
recall per arm. matplotlib (the ``bench`` extra) is imported only here, when plots are drawn;
without it the report says so, says how to get them, and skips them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsh.bench.results import RunRecord, RunResult
from dsh.bench.tables import flat, order, pool, ratio

COLOURS = {"off": "#999999", "basic": "#1f77b4", "basic+recall": "#2ca02c", "recallable": "#d62728"}


def write_plots(out: Path, runs: Sequence[RunRecord], rule: str) -> tuple[list[str], str | None]:
    """PNG plots; returns (file names relative to ``out``, reason when skipped)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], (
            "matplotlib is not installed; get the PNG plots with `uv sync --extra bench` "
            "(or `pip install 'dsh[bench]'`) and rerun `dsh bench report`"
        )
    folder = out / "plots"
    folder.mkdir(parents=True, exist_ok=True)
    ok = [r for r in runs if isinstance(r, RunResult)]
    first_seed = ok[0].seed if ok else None
    scenarios = list(dict.fromkeys(r.scenario for r in ok))
    names: list[str] = []
    for scenario in scenarios:
        mine = sorted(
            (r for r in ok if r.scenario == scenario and r.seed == first_seed),
            key=lambda r: order(r.backend),
        )
        names.append(_save(plt, _context(plt, scenario, mine), folder, f"context-{scenario}.png"))
        names.append(_save(plt, _cache(plt, scenario, mine, rule), folder, f"cache-{scenario}.png"))
    backends = sorted({r.backend for r in ok}, key=order)
    names.append(_save(plt, _cost(plt, ok, scenarios, backends, rule), folder, "cost.png"))
    names.append(_save(plt, _recall(plt, ok, backends), folder, "recall.png"))
    return names, None


def _context(plt: Any, scenario: str, mine: Sequence[RunResult]) -> Any:
    fig, ax = plt.subplots(figsize=(9, 4.2))
    window = mine[0].window
    peaks = [max(r.context, default=0) * 1.05 for r in mine if r.backend != "off"]
    for run in mine:
        style = "--" if run.backend == "off" else "-"
        ax.plot(run.context, style, label=run.backend, color=COLOURS.get(run.backend))
    ax.axhline(window, color="black", linewidth=0.8, label=f"window {window:,}")
    ax.axhline(mine[0].threshold, color="black", linestyle=":", linewidth=0.8, label="threshold")
    ax.set_ylim(0, max([window * 1.15, *peaks]))
    ax.set_xlabel("conversation request (step)")
    ax.set_ylabel("context size (tokens)")
    ax.set_title(f"{scenario} (seed {mine[0].seed}): context size over steps (off is clipped)")
    ax.legend(loc="upper left", fontsize=8)
    return fig


def _cache(plt: Any, scenario: str, mine: Sequence[RunResult], rule: str) -> Any:
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for run in mine:
        cumulative = run.cache[rule].cumulative
        ax.plot(cumulative, label=run.backend, color=COLOURS.get(run.backend))
    ax.set_ylim(0, 1)
    ax.set_xlabel("conversation request (step)")
    ax.set_ylabel(f"cumulative cache-hit ratio ({rule})")
    ax.set_title(f"{scenario}: cumulative cache-hit ratio, summariser calls included")
    ax.legend(loc="lower right", fontsize=8)
    return fig


def _bars(ax: Any, labels: Sequence[str], series: dict[str, list[float]]) -> None:
    width = 0.8 / max(len(series), 1)
    for i, (backend, values) in enumerate(series.items()):
        xs = [x + i * width for x in range(len(labels))]
        ax.bar(xs, values, width, label=backend, color=COLOURS.get(backend))
    ticks = [x + width * (len(series) - 1) / 2 for x in range(len(labels))]
    ax.set_xticks(ticks, labels, fontsize=8)
    ax.legend(fontsize=8)


def _cost(
    plt: Any,
    ok: Sequence[RunResult],
    scenarios: Sequence[str],
    backends: Sequence[str],
    rule: str,
) -> Any:
    fig, ax = plt.subplots(figsize=(9, 4.2))
    series = {
        b: [
            sum(r.cache[rule].cost for r in ok if r.scenario == s and r.backend == b)
            for s in scenarios
        ]
        for b in backends
    }
    _bars(ax, scenarios, series)
    ax.set_yscale("log")
    ax.set_ylabel(f"billed cost, US$ ({rule}, all seeds, log scale)")
    ax.set_title("Billed cost per arm (summariser calls included)")
    return fig


def _recall(plt: Any, ok: Sequence[RunResult], backends: Sequence[str]) -> Any:
    fig, ax = plt.subplots(figsize=(9, 4.2))
    metrics = ("current survival", "exact hit@5", "partial hit@5", "paraphrase hit@5", "reachable")
    series = {}
    for backend in backends:
        f = pool(flat(r) for r in ok if r.backend == backend)
        offered = f.get("recallOffered", False)
        series[backend] = [
            ratio(f["currentSurviving"], f["current"]) or 0,
            *(
                (ratio(f[f"{kind}Hit5"], f[f"{kind}N"]) or 0) if offered else 0
                for kind in ("exact", "partial", "paraphrase")
            ),
            ratio(f["reachable"], f["anchors"]) or 0,
        ]
    _bars(ax, metrics, series)
    ax.set_ylim(0, 1.05)
    ax.set_title("Recall per arm, all runs (recall counts only where the tools are offered)")
    return fig


def _save(plt: Any, fig: Any, folder: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(folder / name, dpi=110)
    plt.close(fig)
    return f"plots/{name}"
