"""``dsh bench``: measure compaction backends on generated long sessions (docs: bench.md).

``dsh bench run`` drives each scenario through the real agent loop once per arm and seed
(scripted model, extractive summariser, simulated provider caches) in parallel processes and
writes a run directory with ``report.md``, ``results.json`` and PNG plots; ``dsh bench report
DIR`` rewrites the report from a run directory; ``list`` and ``generate`` show the scenarios
and the concrete sessions they generate.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click
import msgspec
import yaml  # type: ignore[import-untyped,unused-ignore]  # stubs may be absent

from dsh.bench.cache_rules import RULES
from dsh.bench.generate import generate
from dsh.bench.jobs import MAX_WORKERS
from dsh.bench.options import (
    DEEPSEEK_INTERVAL,
    DEFAULT_SEEDS,
    STEP_SECONDS,
    CacheOptions,
    OnlineOptions,
    RunOptions,
)
from dsh.bench.report import write_report
from dsh.bench.runner import BACKENDS
from dsh.bench.scenario import iter_builtin_specs, load_spec, to_jsonl
from dsh.bench.stopping import RunStopped
from dsh.bench.suite import default_out, resolve_backends, resolve_scenarios, run_suite
from dsh.cli import context
from dsh.cli.options import checked_base_url
from dsh.config import CompactionSettings, load_settings
from dsh.config.small_file import UnreadableFile, read_named_file
from dsh.errors import ConfigError, MissingApiKeyError
from dsh.llm.registry import KNOWN_PROVIDERS, needs_model, route_api_key

DEFAULT_SEED = DEFAULT_SEEDS[0]


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
@click.option(
    "--seed",
    type=int,
    default=DEFAULT_SEED,
    show_default=True,
    help="Seed of the generator: the same seed gives the same session.",
)
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
    default=(",".join(BACKENDS),),
    show_default=True,
    help="Arms to compare (comma-separated); basic+recall is basic with the recall tools.",
)
@click.option(
    "--provider-cache",
    "headline",
    type=click.Choice(RULES),
    default="deepseek",
    show_default=True,
    help="Cache rule and prices for the summary (all are computed).",
)
@click.option(
    "--seed",
    "seeds",
    type=int,
    multiple=True,
    default=DEFAULT_SEEDS,
    show_default=True,
    help="Seeds (repeat the option); the headline tables show every seed side by side.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run directory (default: bench-results/<time>-seed<N>-<M>).",
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
@click.option(
    "--deepseek-interval",
    default=str(DEEPSEEK_INTERVAL),
    show_default=True,
    help="DeepSeek rule (c): tokens between fixed-interval cache units, or 'off' "
    "(undocumented by DeepSeek; the report shows the sensitivity).",
)
@click.option(
    "--openai-evict-minutes",
    type=click.FloatRange(min=0.1),
    default=None,
    help="OpenAI rule: evict a cached prefix unused for this many simulated minutes.",
)
@click.option(
    "--step-seconds",
    type=click.FloatRange(min=0.0),
    default=STEP_SECONDS,
    show_default=True,
    help="Simulated seconds between conversation requests (for TTLs and eviction).",
)
@click.option(
    "--compaction",
    "compaction_overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a [compaction] budget in every scenario, for every arm (repeat), e.g. "
    "stub_region_ratio=0.1.",
)
@click.option("--online", is_flag=True, help="Real summariser + handoff probe (needs an API key).")
@click.option(
    "--provider", default=None, help="Online: provider (default: [provider] name of the config)."
)
@click.option(
    "--model", default=None, help="Online: summariser and probe model (default: [provider] model)."
)
@click.option(
    "--base-url",
    default=None,
    callback=checked_base_url,
    help="Online: endpoint, e.g. an OpenAI-compatible server (default: [provider] base_url).",
)
@click.option(
    "--api-key-env",
    default=None,
    help="Online: environment variable holding the key (default: [provider] api_key or "
    "api_key_env, else the provider's own; an openai-compatible server other than "
    "api.openai.com gets none).",
)
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
    seeds: tuple[int, ...],
    out: Path | None,
    jobs: int,
    latency_ms: int,
    prices_file: Path | None,
    deepseek_interval: str,
    openai_evict_minutes: float | None,
    step_seconds: float,
    compaction_overrides: tuple[str, ...],
    online: bool,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    api_key_env: str | None,
    questions: int,
) -> None:
    """Run scenarios × arms × seeds through the real loop and write the report."""
    online_options = None
    if online:
        online_options = _online_options(provider, model, base_url, api_key_env, questions)
        if online_options is None:
            return
    cache = CacheOptions(
        deepseek_interval=_interval(deepseek_interval),
        openai_evict_minutes=openai_evict_minutes,
        step_seconds=step_seconds,
    )
    options = RunOptions(
        latency_ms=latency_ms,
        prices=_prices(prices_file),
        online=online_options,
        cache=cache,
        compaction=_overrides(compaction_overrides),
    )
    chosen_seeds = list(seeds) or list(DEFAULT_SEEDS)
    directory = out or default_out(chosen_seeds)
    try:
        report = run_suite(
            resolve_scenarios(scenarios),
            resolve_backends(backends),
            seeds=chosen_seeds,
            out=directory,
            options=options,
            headline=headline,
            workers=jobs,
        )
    except RunStopped as stopped:
        _stopped(stopped, directory)
    click.echo(f"report: {report}")


def _stopped(stopped: RunStopped, directory: Path) -> NoReturn:
    """One line saying what the stop kept, then the exit status of the signal (128 + N)."""
    if stopped.finished:
        kept = (
            f"their files are in {directory / 'runs'}; `dsh bench report {directory}` reports "
            "them and names the rest"
        )
    else:
        kept = "nothing to report"
    click.echo(f"dsh: bench run {stopped}; {kept}", err=True)
    sys.exit(128 + stopped.signum)


def _interval(value: str) -> int | None:
    if value.strip().lower() == "off":
        return None
    try:
        interval = int(value)
    except ValueError:
        interval = 0
    if interval < 64:
        raise ConfigError(f"--deepseek-interval must be 'off' or at least 64 tokens, got {value!r}")
    return interval


SUMMARISER_KEYS = (
    "summarizer",
    "summarizer_provider",
    "summarizer_base_url",
    "summarizer_api_key_env",
    "summarizer_timeout_s",
    "summarizer_context_window",
)


def _overrides(items: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as a ``[compaction]`` table (values read as YAML scalars)."""
    # The arm sets the backend; the run sets the summariser (offline extractive, --online model).
    chosen_by_the_run = {"backend", "overrides", *SUMMARISER_KEYS}
    known = set(CompactionSettings.__struct_fields__) - chosen_by_the_run
    table: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip().removeprefix("compaction.")
        if not sep or key not in known:
            keys = ", ".join(sorted(known))
            raise ConfigError(f"--compaction {item!r}: expected KEY=VALUE, KEY one of {keys}")
        try:
            table[key] = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ConfigError(f"--compaction {item!r}: unreadable value: {exc}") from exc
    return table


def _prices(prices_file: Path | None) -> dict[str, object]:
    if prices_file is None:
        return {}
    try:
        prices = yaml.safe_load(read_named_file(prices_file).decode("utf-8")) or {}
    except UnreadableFile as exc:
        raise ConfigError(f"{prices_file}: cannot read prices: {exc.reason}") from exc
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"{prices_file}: cannot read prices: {exc}") from exc
    if not isinstance(prices, dict):
        raise ConfigError(f"{prices_file}: prices must be a table of rules")
    return prices


def _online_options(
    provider: str | None,
    model: str | None,
    base_url: str | None,
    api_key_env: str | None,
    questions: int,
) -> OnlineOptions | None:
    """Flags over the ``[provider]`` config; None (with a message) when the key is missing."""
    configured = load_settings().provider
    name = provider or configured.name
    known = KNOWN_PROVIDERS.get(name)
    if known is None:
        raise ConfigError(f"unknown provider {name!r}; known: {', '.join(KNOWN_PROVIDERS)}")
    same = name == configured.name
    # A configured endpoint serves the provider it was set for, and any server that has no
    # endpoint of its own (openai-compatible), whatever provider name the config carries.
    endpoint = base_url or (configured.base_url if same or known.base_url is None else None)
    if known.adapter == "openai-compat" and known.base_url is None and endpoint is None:
        raise ConfigError(
            f"provider {name!r} needs a base URL: pass --base-url or set provider.base_url"
        )
    # --api-key-env wins; else [provider]'s api_key, then api_key_env, when it is that provider
    # (``make_online_provider`` makes the same choice; the key itself is never kept here).
    own_key = bool(same and not api_key_env and configured.api_key)
    key_env = api_key_env or (configured.api_key_env if same and not own_key else None)
    route = msgspec.structs.replace(
        configured,
        name=name,
        model=model or (configured.model if same else None),
        base_url=endpoint,
        api_key=configured.api_key if own_key else None,
        api_key_env=key_env,
        headers=configured.headers if same else {},
    )
    try:
        route_api_key(
            name,
            endpoint or known.base_url,
            api_key=route.api_key,
            api_key_env=key_env,
            environ=os.environ,
        )
    except MissingApiKeyError as missing:
        click.echo(
            f"dsh bench: online mode skipped: {missing.variable} is not set. Set it to run the "
            "real summariser and the handoff probe; `dsh bench run` without --online needs "
            "no key.",
            err=True,
        )
        return None
    from dsh.agent.runtime import chosen_model  # the agent's imports, only for online mode

    # No model named: a server's one listed model, as a session's route takes it.
    chosen = chosen_model(route, os.environ)[0] or known.default_model
    if not chosen:
        raise ConfigError(needs_model(name))
    return OnlineOptions(
        provider=name,
        model=chosen,
        questions=questions,
        base_url=endpoint,
        api_key_env=key_env,
    )


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
