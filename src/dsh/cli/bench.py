"""``dsh bench``: measure compaction backends on generated long sessions (docs: bench.md).

``dsh bench run`` drives each scenario through the real agent loop once per backend (scripted
model, extractive summariser, simulated provider caches) in parallel processes and writes a run
directory with ``report.md``, ``results.json`` and PNG plots; ``dsh bench report DIR`` rewrites
the report from a run directory; ``list`` and ``generate`` show the scenarios and the concrete
sessions they generate.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
import yaml  # type: ignore[import-untyped,unused-ignore]  # stubs may be absent

from dsh.bench.cache_rules import RULES
from dsh.bench.generate import generate
from dsh.bench.report import write_report
from dsh.bench.runner import MAX_WORKERS, OnlineOptions, RunOptions
from dsh.bench.scenario import iter_builtin_specs, load_spec, to_jsonl
from dsh.bench.suite import default_out, resolve_backends, resolve_scenarios, run_suite
from dsh.cli import context
from dsh.errors import ConfigError
from dsh.llm.registry import KNOWN_PROVIDERS

DEFAULT_SEED = 7


@click.group("bench", cls=context.DshGroup)
def bench() -> None:
    """Measure compaction honestly: cost, cache hits and what the model can still use."""


@bench.command("list")
def list_scenarios() -> None:
    """The built-in scenarios."""
    for spec in iter_builtin_specs():
        click.echo(
            f"{spec.name:<18} {spec.turns:>3} turns, window {spec.window:>6,}  {spec.description}"
        )


@bench.command("generate")
@click.argument("scenario")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the JSONL here (default: standard output).",
)
def generate_command(scenario: str, seed: int, out: Path | None) -> None:
    """Print the concrete session a scenario spec generates (JSONL; same seed, same bytes)."""
    data = to_jsonl(generate(load_spec(scenario), seed))
    if out is None:
        sys.stdout.buffer.write(data)
    else:
        out.write_bytes(data)


@bench.command("run")
@click.option(
    "--scenario",
    "scenarios",
    multiple=True,
    default=("all",),
    show_default=True,
    help="Built-in name, spec file (.yaml) or generated session (.jsonl); 'all' for "
    "every built-in scenario. Repeat or comma-separate.",
)
@click.option(
    "--backend",
    "backends",
    multiple=True,
    default=("off,basic,recallable",),
    show_default=True,
    help="Backends to compare (comma-separated).",
)
@click.option(
    "--provider-cache",
    "headline",
    type=click.Choice(RULES),
    default="deepseek",
    show_default=True,
    help="Cache rule and prices for the summary (all are computed).",
)
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run directory (default: bench-results/<time>-seed<N>).",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=MAX_WORKERS,
    show_default=True,
    help="Parallel worker processes (capped by the CPU count).",
)
@click.option(
    "--latency-ms",
    type=click.IntRange(0, 60_000),
    default=100,
    show_default=True,
    help="Simulated summariser latency per call (offline).",
)
@click.option(
    "--prices",
    "prices_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="YAML {rule: {input, output, cache_read, cache_write}} overrides.",
)
@click.option("--online", is_flag=True, help="Real summariser + handoff probe (needs an API key).")
@click.option("--provider", default="deepseek", show_default=True, help="Online: provider.")
@click.option("--model", default=None, help="Online: summariser and probe model.")
@click.option(
    "--questions",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="Online: handoff-probe questions after each pass.",
)
def run_command(
    scenarios: tuple[str, ...],
    backends: tuple[str, ...],
    headline: str,
    seed: int,
    out: Path | None,
    jobs: int,
    latency_ms: int,
    prices_file: Path | None,
    online: bool,
    provider: str,
    model: str | None,
    questions: int,
) -> None:
    """Run scenarios × backends through the real loop and write the report."""
    prices: dict[str, object] = {}
    if prices_file is not None:
        try:
            prices = yaml.safe_load(prices_file.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{prices_file}: cannot read prices: {exc}") from exc
        if not isinstance(prices, dict):
            raise ConfigError(f"{prices_file}: prices must be a table of rules")
    online_options = None
    if online:
        known = KNOWN_PROVIDERS.get(provider)
        if known is None:
            raise ConfigError(f"unknown provider {provider!r}; known: {', '.join(KNOWN_PROVIDERS)}")
        if known.key_required and not os.environ.get(known.key_env):
            click.echo(
                f"dsh bench: online mode skipped: {known.key_env} is not set. Set it to run the "
                "real summariser and the handoff probe; `dsh bench run` without --online needs "
                "no key.",
                err=True,
            )
            return
        online_options = OnlineOptions(
            provider=provider, model=model or known.default_model or "", questions=questions
        )
    options = RunOptions(latency_ms=latency_ms, prices=prices, online=online_options)
    chosen = resolve_scenarios(scenarios)
    report = run_suite(
        chosen,
        resolve_backends(backends),
        seed=seed,
        out=out or default_out(seed),
        options=options,
        headline=headline,
        workers=jobs,
    )
    click.echo(f"report: {report}")


@bench.command("report")
@click.argument("directory", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "--provider-cache",
    "headline",
    type=click.Choice(RULES),
    default=None,
    help="Cache rule for the summary (default: the one the run used).",
)
def report_command(directory: Path, headline: str | None) -> None:
    """Rewrite report.md, results.json and the plots of a run directory."""
    if not (directory / "runs").is_dir():
        raise ConfigError(f"{directory} is not a bench run directory (no runs/ inside)")
    click.echo(f"report: {write_report(directory, rule=headline)}")


if __name__ == "__main__":  # pragma: no cover - `python -m dsh.cli.bench` until it is registered
    bench()
