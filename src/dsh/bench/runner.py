"""Driving one scenario through the real agent loop with one backend, and many runs in parallel.

``run_scenario`` mirrors ``dsh.agent.runtime.build_agent`` — default tools, plus the recall tools
and their prompt section with the recallable backend, compaction hooks, the ``auto`` approval
policy — but builds the parts itself because the bench needs handles on them: the engine is a
``ProbedEngine`` (records each pass), the pre-step hook is wrapped (records each threshold
crossing), the provider is a ``RecordingProvider`` around the ``scripted`` provider, and the
summariser is the extractive one billed as a model call (``SimulatedSummarizer``) or, online, a
real ``ModelSummarizer``. Tools are the real ones, run in a temporary workspace that the scenario
seeds with its files. The system prompt names a fixed workspace path, so token counts (and so
every figure but time) are the same on every machine.

``run_jobs`` runs (scenario, backend) jobs in a ``ProcessPoolExecutor`` (spawned workers, at most
two by default) and reports progress per run.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dsh.agent import Agent, AgentConfig, PreStepHook, rebuild_requests, system_prompt
from dsh.agent.hooks import DEFAULT_WINDOW, compaction_hooks
from dsh.bench.cache_rules import RULES, AnthropicRule, load_prices, make_rule
from dsh.bench.generate import generate
from dsh.bench.scenario import Scenario, from_jsonl, load_spec
from dsh.bench.scorers import (
    cache_figures,
    growth_commits,
    pairing_errors,
    passes_per_crossing,
    raw_anchors,
    recall,
    stub_stability,
    superseded_leaks,
    survival,
)
from dsh.bench.trace import RecordingProvider, SimulatedSummarizer, Trace
from dsh.compaction import (
    CompactionEngine,
    ExtractiveSummarizer,
    ModelSummarizer,
    PassResult,
    Plan,
    RecallableBackend,
    make_backend,
)
from dsh.compaction.base import CompactionBackend, CompactionError
from dsh.compaction.recallable import checkpoint_kind
from dsh.compaction.summarizer import Summarizer
from dsh.config import CompactionSettings, RecallSettings
from dsh.errors import DshError
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import Provider
from dsh.recall import RECALL_PROMPT_SECTION, recall_tools
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import Tool
from dsh.tools.registry import ToolRegistry, default_tools

BACKENDS = ("off", "basic", "recallable")
DISPLAY_ROOT = "/workspace"
"""The workspace path the system prompt shows (the real one is a temporary directory)."""
MAX_WORKERS = 2

Progress = Callable[[int, int, int], None]
"""(turns done, turns in total, passes so far)."""


class BenchError(DshError):
    """A bench run could not be set up or did not complete."""


# ---- records ---------------------------------------------------------------------------------


@dataclass(slots=True)
class PassRecord:
    number: int
    step: int
    """Conversation requests sent before the pass."""
    turn: int | None
    tokens_before: int
    tokens_after: int
    regions: int
    stubs: int
    summariser_calls: int
    wall_s: float
    region_growth: int
    """Regions whose checkpoint is larger than what it shadows (the pass as a whole shrank)."""


@dataclass(slots=True)
class Crossing:
    step: int
    tokens: int
    threshold: int
    passes: int
    after: int


class ProbedEngine(CompactionEngine):
    """The engine, recording every landed pass (and every refusal) as it happens."""

    def __init__(
        self,
        session: Session,
        backend: CompactionBackend,
        settings: CompactionSettings,
        trace: Trace,
        **options: Any,
    ) -> None:
        super().__init__(session, backend, settings, **options)
        self.trace = trace
        self.passes: list[PassRecord] = []
        self.refusals: list[str] = []
        self.after_pass: list[Callable[[PassRecord], Any]] = []

    async def run_pass(
        self, plan: Plan, *, turn: int | None, source_command_id: str | None = None
    ) -> PassResult:
        calls = len(self.trace.calls)
        started = time.perf_counter()
        try:
            result = await super().run_pass(plan, turn=turn, source_command_id=source_command_id)
        except CompactionError as exc:
            self.refusals.append(str(exc))
            raise
        elapsed = time.perf_counter() - started
        session = self.session
        record = PassRecord(
            number=len(self.passes) + 1,
            step=self.trace.conversation_calls,
            turn=turn,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            regions=len(result.checkpoints),
            stubs=sum(c.kind == "index" for c in result.checkpoints),
            summariser_calls=sum(c.purpose == "compaction" for c in self.trace.calls[calls:]),
            wall_s=elapsed,
            region_growth=sum(
                session.node_tokens(c.checkpoint_seq) >= c.shadowed_tokens
                for c in result.checkpoints
            ),
        )
        self.passes.append(record)
        self.trace.pending_passes.append(record.number)
        return result


# ---- one run ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OnlineOptions:
    provider: str
    model: str
    questions: int = 3
    """Handoff-probe questions asked after each pass."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    latency_ms: int = 100
    """Simulated summariser latency per call (offline)."""
    prices: dict[str, Any] = field(default_factory=dict)
    online: OnlineOptions | None = None


def load_scenario(name_or_path: str, seed: int) -> Scenario:
    """A built-in spec or spec file generated with ``seed``, or a generated ``.jsonl`` file."""
    if name_or_path.endswith(".jsonl"):
        path = Path(name_or_path)
        try:
            return from_jsonl(path.read_bytes(), source=str(path))
        except OSError as exc:
            raise BenchError(f"{path}: cannot read scenario: {exc}") from exc
    return generate(load_spec(name_or_path), seed)


def run_scenario(
    scenario: Scenario,
    backend: str,
    *,
    options: RunOptions | None = None,
    workdir: Path | None = None,
    progress: Progress | None = None,
    summariser_provider: Provider | None = None,
) -> dict[str, Any]:
    """Drive ``scenario`` through the loop with ``backend``; returns the JSON-able result.

    Online (``options.online``), ``summariser_provider`` writes the summaries and answers the
    handoff probes; it is built from ``options.online`` when not given.
    """
    options = options or RunOptions()
    if backend not in BACKENDS:
        raise BenchError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="dsh-bench-") as tmp:
            return run_scenario(
                scenario,
                backend,
                options=options,
                workdir=Path(tmp),
                progress=progress,
                summariser_provider=summariser_provider,
            )
    if options.online is not None and summariser_provider is None:
        summariser_provider = make_online_provider(options.online)
    # The engine logs a warning each time a pre-step ends over the threshold; the run counts them.
    quiet = logging.getLogger("dsh.compaction")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        return asyncio.run(_run(scenario, backend, options, workdir, progress, summariser_provider))
    finally:
        quiet.setLevel(level)


async def _run(
    scenario: Scenario,
    backend_name: str,
    options: RunOptions,
    workdir: Path,
    progress: Progress | None,
    online_provider: Provider | None,
) -> dict[str, Any]:
    settings = scenario.settings(backend_name)
    workspace = workdir / "ws"
    for name, text in scenario.files.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    session = Session.create(MemoryStore(), cwd=f"{DISPLAY_ROOT}/{scenario.name}")
    trace = Trace()
    provider = RecordingProvider(ScriptedProvider(scenario.entries(), model="scripted"), trace)
    online = options.online
    summarizer: Summarizer
    if online is not None:
        assert online_provider is not None
        summarizer = ModelSummarizer(
            RecordingProvider(online_provider, trace, purpose="compaction"),
            online.model,
            history=session.events,
        )
    else:
        summarizer = SimulatedSummarizer(
            ExtractiveSummarizer(), trace, latency=options.latency_ms / 1000
        )
    backend = make_backend(settings, summarizer)
    tools: list[Tool] = default_tools()
    sections: tuple[str, ...] = ()
    if isinstance(backend, RecallableBackend):
        tools += recall_tools(RecallSettings())
        sections = (RECALL_PROMPT_SECTION,)
    ids = itertools.count(1)
    engine = (
        ProbedEngine(session, backend, settings, trace, new_id=lambda: f"p{next(ids):03d}")
        if backend is not None
        else None
    )
    crossings: list[Crossing] = []
    hooks: list[PreStepHook] = []
    overflow = None
    probe = None
    if engine is not None:
        pre_step, overflow = compaction_hooks(engine)
        if online is not None:
            from dsh.bench.online import HandoffProbe

            assert online_provider is not None
            probe = HandoffProbe(
                scenario,
                session,
                RecordingProvider(online_provider, trace, purpose="probe"),
                online,
            )

        async def recorded(agent: Agent, turn: int) -> None:
            window = agent.config.context_window or DEFAULT_WINDOW
            threshold = engine.threshold(window)
            before = session.measure().total_tokens
            passes = len(engine.passes)
            await pre_step(agent, turn)
            ran = len(engine.passes) - passes
            if before >= threshold or ran:
                after = session.measure().total_tokens
                crossings.append(Crossing(trace.conversation_calls, before, threshold, ran, after))
            if ran and probe is not None:
                await probe.after_pass(agent, turn, engine.passes[-1].number)

        hooks.append(recorded)
    agent = Agent(
        session,
        provider,
        ToolRegistry(tools),
        ApprovalPolicy("auto"),
        config=AgentConfig(
            provider="scripted",
            model="scripted",
            system=system_prompt(Path(f"{DISPLAY_ROOT}/{scenario.name}"), sections=sections),
            context_window=scenario.window,
            max_steps=50,
            retry_base_delay=0.0,
            max_overflow_retries=settings.max_overflow_retries,
        ),
        workspace=workspace,
        pre_step_hooks=hooks,
        overflow_handler=overflow,
    )
    started = time.perf_counter()
    error = None
    for number, turn in enumerate(scenario.turns, start=1):
        result = await agent.run_turn(turn.prompt)
        if result.reason != "completed":
            error = f"turn {number} ended {result.reason}: {result.error}"
            break
        if progress is not None:
            progress(number, len(scenario.turns), len(engine.passes) if engine else 0)
    wall = time.perf_counter() - started
    figures = score_run(
        scenario,
        backend_name,
        session=session,
        trace=trace,
        requests=provider.requests,
        engine=engine,
        crossings=crossings,
        settings=settings,
        options=options,
        recall_offered=isinstance(backend, RecallableBackend),
    )
    figures["time"]["wallS"] = wall
    figures["error"] = error
    if probe is not None:
        figures["online"] = probe.summary()
    return figures


def score_run(
    scenario: Scenario,
    backend: str,
    *,
    session: Session,
    trace: Trace,
    requests: Sequence[Any],
    engine: ProbedEngine | None,
    crossings: Sequence[Crossing],
    settings: CompactionSettings,
    options: RunOptions,
    recall_offered: bool,
) -> dict[str, Any]:
    """Every score of one finished run (see ``dsh.bench.scorers``)."""
    events = session.events
    final = requests[-1] if requests else None
    anchors = [f.anchor for f in scenario.facts]
    surviving = survival(final, anchors)
    raw = raw_anchors(final, anchors)
    compacted = [f for f in scenario.facts if f.anchor not in raw]
    exact = recall(events, [(f.anchor, f.anchor) for f in compacted])
    partial = recall(events, [(f.anchor, f.query) for f in compacted])
    reachable = [
        f.anchor
        for f in scenario.facts
        if surviving.present[f.anchor]
        or (recall_offered and (exact.ranks.get(f.anchor) or 99) <= 5)
    ]
    leaks = superseded_leaks(
        requests, [(old.anchor, new.anchor) for old, new in scenario.supersessions()]
    )
    stability = stub_stability(requests)
    pairing = [
        (i, errors) for i, r in enumerate(requests) if (errors := pairing_errors(r.messages))
    ]
    rebuilt = [request for _, request in rebuild_requests(events)]
    mismatches = sum(a != b for a, b in zip(rebuilt, requests, strict=False)) + abs(
        len(rebuilt) - len(requests)
    )
    prices = load_prices(options.prices)
    cache = {}
    for rule in RULES:
        served = trace.replay(make_rule(rule))
        cache[rule] = cache_figures(trace.calls, served, prices[rule])
    what_if = cache_figures(
        trace.calls, trace.replay(AnthropicRule(), stub_breakpoint=True), prices["anthropic"]
    )
    passes = engine.passes if engine is not None else []
    context = [c.input_tokens for c in trace.calls if c.purpose == "conversation"]
    walls = [p.wall_s for p in passes]
    layout = [checkpoint_kind(session, seq) or "tail" for seq in session.nodes]
    return {
        "scenario": scenario.name,
        "backend": backend,
        "seed": scenario.seed,
        "specDigest": scenario.spec_digest,
        "window": scenario.window,
        "threshold": int(scenario.window * settings.threshold_ratio),
        "settings": {k: v for k, v in asdict_settings(settings).items() if k != "overrides"},
        "summariser": "model" if options.online else "extractive (billed as a model call)",
        "counts": {
            "events": len(events),
            "turns": len(scenario.turns),
            "requests": len(requests),
            "summariserCalls": sum(c.purpose == "compaction" for c in trace.calls),
            "finalLayout": {k: layout.count(k) for k in ("index", "state", "tail")},
        },
        "passes": [asdict(p) for p in passes],
        "crossings": [asdict(c) for c in crossings],
        "context": context,
        "cache": cache,
        "whatIf": {
            "anthropicStubBreakpoint": {
                key: what_if[key]
                for key in ("hitRatio", "inputTokens", "readTokens", "cost", "firstAfterPass")
            }
        },
        "survival": {"share": surviving.share, "present": surviving.present},
        "recall": {
            "offered": recall_offered,
            "population": len(compacted),
            "exact": exact.as_dict(),
            "partial": partial.as_dict(),
        },
        "reachable": {
            "share": len(reachable) / len(anchors) if anchors else 1.0,
            "anchors": reachable,
        },
        "superseded": leaks.as_dict(),
        "stability": stability.as_dict(),
        "safety": {
            "growthCommits": growth_commits((p.tokens_before, p.tokens_after) for p in passes),
            "regionGrowth": sum(p.region_growth for p in passes),
            **{
                f"{k}PassesPerCrossing" if k in ("max", "mean") else k: v
                for k, v in passes_per_crossing(c.passes for c in crossings).items()
            },
            "warnings": len(engine.warnings) if engine is not None else 0,
            "refusals": len(engine.refusals) if engine is not None else 0,
            "pairingErrors": len(pairing),
            "pairingExamples": [f"request {i}: {e[0]}" for i, e in pairing[:3]],
            "logMismatches": mismatches,
            "overWindow": sum(tokens > scenario.window for tokens in context),
            "peakContext": max(context, default=0),
        },
        "time": {
            "latencyMs": options.latency_ms if options.online is None else None,
            "passWallMeanS": sum(walls) / len(walls) if walls else 0.0,
            "passWallMaxS": max(walls, default=0.0),
            "summariserCallsPerPass": (
                sum(p.summariser_calls for p in passes) / len(passes) if passes else 0.0
            ),
        },
        "online": None,
    }


def asdict_settings(settings: CompactionSettings) -> dict[str, Any]:
    import msgspec

    return msgspec.structs.asdict(settings)


def make_online_provider(online: OnlineOptions) -> Provider:
    """The real provider for online mode (raises ``MissingApiKeyError`` without a key)."""
    from dsh.llm.registry import make_provider

    provider, _, _ = make_provider(
        online.provider, model=online.model, base_url=None, api_key=None, environ=os.environ
    )
    return provider


# ---- many runs -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Job:
    scenario: str
    backend: str
    seed: int
    options: RunOptions

    @property
    def key(self) -> str:
        return (
            f"{Path(self.scenario).stem if '/' in self.scenario else self.scenario}/{self.backend}"
        )


def run_job(job: Job, queue: Any = None) -> dict[str, Any]:
    """Worker entry point: one run, never raising (a failure is a result with ``error``)."""

    def progress(done: int, total: int, passes: int) -> None:
        if queue is not None:
            queue.put((job.key, done, total, passes))

    try:
        scenario = load_scenario(job.scenario, job.seed)
        return run_scenario(scenario, job.backend, options=job.options, progress=progress)
    except Exception as exc:  # one failed run must not sink the others
        return {
            "scenario": job.scenario,
            "backend": job.backend,
            "seed": job.seed,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
    finally:
        if queue is not None:
            queue.put((job.key, -1, -1, -1))


def run_jobs(
    jobs: Sequence[Job], *, workers: int = MAX_WORKERS, stream: Any = None
) -> list[dict[str, Any]]:
    """Run every job, in spawned worker processes when ``workers`` > 1 (capped by the CPU
    count); results in job order. A worker that dies is reported as that job's error."""
    from dsh.bench.progress import ProgressBoard

    board = ProgressBoard([j.key for j in jobs], stream=stream or sys.stderr)
    workers = max(1, min(workers, len(jobs), os.cpu_count() or 1))
    try:
        if workers == 1:
            return [run_job(job, board.sink()) for job in jobs]
        import multiprocessing

        context = multiprocessing.get_context("spawn")  # no fork of a threaded parent
        with context.Manager() as manager:
            queue = manager.Queue()
            with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                futures: list[Future[dict[str, Any]]] = [
                    pool.submit(run_job, job, queue) for job in jobs
                ]
                while not all(f.done() for f in futures):
                    board.drain(queue, timeout=0.2)
                board.drain(queue)
            return [_outcome(job, future) for job, future in zip(jobs, futures, strict=True)]
    finally:
        board.close()


def _outcome(job: Job, future: Future[dict[str, Any]]) -> dict[str, Any]:
    try:
        return future.result()
    except Exception as exc:  # a worker process died (killed, out of memory)
        return {
            "scenario": job.scenario,
            "backend": job.backend,
            "seed": job.seed,
            "error": f"worker failed: {type(exc).__name__}: {exc}",
        }
