"""A whole bench run: scenarios × arms × seeds → ``meta.json`` + ``runs/*.json`` + the report."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import msgspec

from dsh.bench.cache_rules import ANTHROPIC_TTL_S, load_prices
from dsh.bench.jobs import MAX_WORKERS, Job, run_jobs
from dsh.bench.options import RunOptions
from dsh.bench.report import write_report
from dsh.bench.results import as_record
from dsh.bench.runner import BACKENDS, compaction_backend, load_scenario
from dsh.bench.scenario import builtin_names
from dsh.errors import ConfigError
from dsh.tools.own_git import GitConfigError, run_git


def versions() -> dict[str, str]:
    """Versions the report states: dsh, its git commit, Python, platform and key libraries."""
    found = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("dsh", "msgspec", "click", "matplotlib"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    where = Path(__file__).parent
    try:  # dsh's own checkout, git run as dsh runs it on its own (dsh.tools.own_git)
        commit = run_git(where, "rev-parse", "--short", "HEAD", timeout=5)
        dirty = run_git(
            where, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules=dirty",
            timeout=5,
        )  # fmt: skip
        if commit.returncode == 0:
            found["git"] = commit.stdout.decode(errors="replace").strip() + (
                ", modified tree" if dirty.stdout.strip() else ""
            )
    except (OSError, subprocess.SubprocessError, GitConfigError):
        pass
    return found


def resolve_scenarios(names: Sequence[str]) -> list[str]:
    """``all`` → every built-in scenario; names and paths pass through (comma lists allowed)."""
    flat = [n.strip() for name in names for n in name.split(",") if n.strip()]
    resolved: list[str] = []
    for name in flat or ["all"]:
        for item in builtin_names() if name == "all" else [name]:
            if item not in resolved:
                resolved.append(item)
    return resolved


def resolve_backends(names: Sequence[str]) -> list[str]:
    flat = [n.strip() for name in names for n in name.split(",") if n.strip()] or list(BACKENDS)
    unknown = [n for n in flat if n not in BACKENDS]
    if unknown:
        known = ", ".join(BACKENDS)
        raise ConfigError(f"unknown backend(s) {', '.join(unknown)}; known: {known}")
    return sorted(dict.fromkeys(flat), key=BACKENDS.index)


def default_out(seeds: Sequence[int]) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("bench-results") / f"{stamp}-seed{'-'.join(str(s) for s in seeds)}"


def describe(name: str, seed: int) -> dict[str, Any]:
    scenario = load_scenario(name, seed)
    return {
        "name": scenario.name,
        "source": name,
        "description": scenario.description,
        "specDigest": scenario.spec_digest,
        "generatorVersion": scenario.version,
        "window": scenario.window,
        "turns": len(scenario.turns),
        "facts": [msgspec.to_builtins(f) for f in scenario.facts],
    }


def run_meta(
    out: Path,
    described: Sequence[dict[str, Any]],
    *,
    backends: Sequence[str],
    seeds: Sequence[int],
    options: RunOptions,
    headline: str,
    workers: int,
) -> dict[str, Any]:
    """``meta.json``: what the run was configured with (the report's method notes read it)."""
    prices = load_prices(options.prices)
    online = msgspec.to_builtins(options.online) if options.online else None
    return {
        "runId": out.name,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "seed": seeds[0],
        "seeds": list(seeds),
        "mode": "online" if options.online else "offline",
        "latencyMs": options.latency_ms,
        "online": online,
        "cache": {
            "deepseekInterval": options.cache.deepseek_interval,
            "openaiEvictMinutes": options.cache.openai_evict_minutes,
            "stepSeconds": options.cache.step_seconds,
            "anthropicTtlS": ANTHROPIC_TTL_S,
        },
        "backends": list(backends),
        "compactionOverrides": dict(options.compaction),
        "scenarioOrder": [d["name"] for d in described],
        "scenarios": list(described),
        "headline": headline,
        "prices": {rule: msgspec.structs.asdict(price) for rule, price in prices.items()},
        "versions": versions(),
        "workers": workers,
    }


def run_suite(
    scenarios: Sequence[str],
    backends: Sequence[str],
    *,
    seeds: Sequence[int],
    out: Path,
    options: RunOptions,
    headline: str = "deepseek",
    workers: int = MAX_WORKERS,
    stream: TextIO | None = None,
) -> Path:
    """Run every (scenario, arm, seed), write the run directory, return ``report.md``'s path.

    ``out`` must not hold another run (its runs would be reported as this one's); each run's
    file is written whole as soon as the run finishes, so a run stopped (SIGINT or SIGTERM:
    :class:`~dsh.bench.stopping.RunStopped`, its workers stopped) keeps what finished and
    ``dsh bench report`` names the rest."""
    seeds = list(dict.fromkeys(seeds))
    refuse_used_out(out)
    # Fail fast on a bad name, before any process starts; every seed must generate.
    described = [describe(name, seeds[0]) for name in scenarios]
    for name in scenarios:
        for seed in seeds[1:]:
            load_scenario(name, seed)
        for backend in backends:  # overrides must make valid settings for every run
            load_scenario(name, seeds[0]).settings(compaction_backend(backend), options.compaction)
    meta = run_meta(  # before the directory exists: a bad --prices leaves nothing behind
        out,
        described,
        backends=backends,
        seeds=seeds,
        options=options,
        headline=headline,
        workers=workers,
    )
    runs_dir = out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    (out / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")
    many = len(seeds) > 1
    jobs = [
        Job(name, backend, seed, options, show_seed=many)
        for seed in seeds
        for name in scenarios
        for backend in backends
    ]

    def save(job: Job, result: dict[str, Any]) -> None:
        name = as_record(result).scenario or job.scenario
        path = runs_dir / f"{Path(name).stem}--{job.backend}--seed{job.seed}.json"
        partial = path.with_name(path.name + ".partial")  # a stop mid-write leaves no half file
        try:
            partial.write_text(json.dumps(result, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)

    run_jobs(jobs, workers=workers, stream=stream, on_result=save)
    # the report and its plots take seconds (matplotlib): say so rather than sit silent
    print(f"writing the report and its plots in {out} …", file=stream or sys.stderr, flush=True)
    return write_report(out, rule=headline)


def refuse_used_out(out: Path) -> None:
    """A run directory that already holds a run (``meta.json`` or a run file) is refused: its
    runs would be reported with this run's settings."""
    used = (out / "meta.json").exists() or any((out / "runs").glob("*.json"))
    if used:
        raise ConfigError(
            f"{out} already holds a bench run; choose another --out (or remove it first)"
        )
