"""Driving one scenario through the real agent loop with one backend (arm).

``run_scenario`` builds the parts through the builder every face uses
(``dsh.agent.wiring.build_parts``: default tools but ``web_fetch`` (``BENCH_TOOLS``), plus the
recall tools and their prompt section where the arm offers them, the engine and its compaction
hooks) with the bench's injection points: the route's provider is a ``RecordingProvider`` around
the ``scripted`` provider, an ``on_pass`` observer records each pass, the summariser is the
extractive one billed as a model call (``SimulatedSummarizer``) or, online, a real
``ModelSummarizer``; the pre-step hook is wrapped (records each threshold crossing) and the
approval policy is ``auto``. Tools are the real ones,
run in a temporary workspace that the scenario seeds with its files. The system prompt names a
fixed workspace path and states a fixed environment (``BENCH_ENVIRONMENT``: the shape and about
the size of a real one), so token counts (and so every figure but time) are the same on every
machine and every day.

Arms: ``off``, ``basic``, ``basic+recall`` (basic compaction with the recall tools, the control
that separates what the tools buy from what stubs and state buy) and ``recallable``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from dsh.agent import Agent, AgentConfig, PreStepHook, system_prompt
from dsh.agent.environment import Environment, GitFacts
from dsh.agent.runtime import Route
from dsh.agent.wiring import Injection, build_parts
from dsh.bench.generate import generate
from dsh.bench.online import HandoffProbe
from dsh.bench.options import OnlineOptions, RunOptions
from dsh.bench.records import Crossing, PassRecord
from dsh.bench.results import RunResult, as_json
from dsh.bench.scenario import Scenario, from_jsonl, load_spec
from dsh.bench.score import RunLog, score_run
from dsh.bench.trace import RecordingProvider, SimulatedSummarizer, Trace
from dsh.compaction import ExtractiveSummarizer, ModelSummarizer
from dsh.compaction.engine import PassOutcome
from dsh.compaction.summarizer import Summarizer
from dsh.config import DEFAULT_CONTEXT_WINDOW, Settings, ToolSettings
from dsh.config.small_file import UnreadableFile, read_named_file
from dsh.errors import DshError
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import Provider
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy

BACKENDS = ("off", "basic", "basic+recall", "recallable")
RECALL_ARMS = ("basic+recall", "recallable")
"""Arms that offer the recall tools."""
DISPLAY_ROOT = "/workspace"
"""The workspace path the system prompt shows (the real one is a temporary directory)."""
BENCH_ENVIRONMENT = Environment(
    platform="Linux (Ubuntu 24.04)", shell="bash 5.2", date=date(2026, 1, 1), git=GitFacts("main")
)
"""The environment the system prompt states (the real machine's would vary the figures)."""
BENCH_TOOLS = ToolSettings(web_fetch=False)
"""The scenarios run offline and never fetch: ``web_fetch``'s schema would only add to every
request's header (the figures in docs/compaction.md were measured without it)."""

Progress = Callable[[int, int, int], None]
"""(turns done, turns in total, passes so far)."""


class BenchError(DshError):
    """A bench run could not be set up or did not complete."""


def compaction_backend(arm: str) -> str:
    """The ``[compaction] backend`` of an arm."""
    return "basic" if arm == "basic+recall" else arm


def load_scenario(name_or_path: str, seed: int) -> Scenario:
    """A built-in spec or spec file generated with ``seed``, or a generated ``.jsonl`` file."""
    if name_or_path.endswith(".jsonl"):
        path = Path(name_or_path)
        try:
            data = read_named_file(path)
        except UnreadableFile as exc:
            raise BenchError(f"{path}: cannot read scenario: {exc.reason}") from exc
        return from_jsonl(data, source=str(path))
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
    """Drive ``scenario`` through the loop with ``backend`` (an arm); returns the run's
    ``RunResult`` in its JSON form (``dsh.bench.results.as_json``: what a worker process hands
    back and ``runs/*.json`` holds). Online (``options.online``), ``summariser_provider``
    writes the summaries and answers the handoff probes; it is built from ``options.online``
    when not given."""
    options = options or RunOptions()
    if backend not in BACKENDS:
        raise BenchError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    if options.online is not None and summariser_provider is None:
        summariser_provider = make_online_provider(options.online)
    # The engine logs a warning each time a pre-step ends over the threshold; the run counts them.
    quiet = logging.getLogger("dsh.compaction")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with tempfile.TemporaryDirectory(prefix="dsh-bench-") as tmp:
            run = _Run(scenario, backend, options, Path(workdir or tmp), summariser_provider)
            return as_json(asyncio.run(run.drive(progress)))
    finally:
        quiet.setLevel(level)


class _Run:
    """One (scenario, arm) run: the parts, the loop, then the scores."""

    def __init__(
        self,
        scenario: Scenario,
        arm: str,
        options: RunOptions,
        workdir: Path,
        online_provider: Provider | None,
    ) -> None:
        self.scenario, self.arm, self.options = scenario, arm, options
        self.settings = scenario.settings(compaction_backend(arm), options.compaction)
        self.workspace = workdir / "ws"
        for name, text in scenario.files.items():
            path = self.workspace / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        self.session = Session.create(MemoryStore(), cwd=f"{DISPLAY_ROOT}/{scenario.name}")
        self.trace = Trace(step_seconds=options.cache.step_seconds)
        self.provider = RecordingProvider(
            ScriptedProvider(scenario.entries(), model="scripted"), self.trace
        )
        self.online_provider = online_provider
        self.passes: list[PassRecord] = []
        self.refusals: list[str] = []
        self._calls_seen = 0
        ids = itertools.count(1)
        self.parts = build_parts(
            Settings(compaction=self.settings, tools=BENCH_TOOLS),
            Route(self.provider, "scripted", scenario.window),
            self.session,
            inject=Injection(
                summarizer=lambda session: self._summarizer(),
                on_pass=self._record_pass,
                new_id=lambda: f"p{next(ids):03d}",
                offer_recall=arm in RECALL_ARMS,
                derived_files=False,
            ),
        )
        self.engine = self.parts.engine
        self.crossings: list[Crossing] = []
        self.probe: HandoffProbe | None = None

    def _record_pass(self, outcome: PassOutcome) -> None:
        """Every landed pass (and every refusal), as it happens."""
        calls = self.trace.calls[self._calls_seen :]
        self._calls_seen = len(self.trace.calls)
        result = outcome.result
        if result is None:
            self.refusals.append(str(outcome.error))
            return
        record = PassRecord(
            number=len(self.passes) + 1,
            step=self.trace.conversation_calls,
            turn=outcome.turn,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            regions=len(result.checkpoints),
            stubs=sum(c.kind == "index" for c in result.checkpoints),
            summariser_calls=sum(c.purpose == "compaction" for c in calls),
            wall_s=outcome.wall_s,
            region_growth=sum(
                self.session.node_tokens(c.checkpoint_seq) >= c.shadowed_tokens
                for c in result.checkpoints
            ),
        )
        self.passes.append(record)
        self.trace.pending_passes.append(record.number)

    def _summarizer(self) -> Summarizer:
        online = self.options.online
        if online is not None:
            assert self.online_provider is not None
            return ModelSummarizer(
                RecordingProvider(self.online_provider, self.trace, purpose="compaction"),
                online.model,
                history=self.session.events,
            )
        return SimulatedSummarizer(
            ExtractiveSummarizer(), self.trace, latency=self.options.latency_ms / 1000
        )

    def _hooks(self) -> tuple[list[PreStepHook], Any]:
        engine = self.engine
        if engine is None:
            return [], None
        (pre_step,), overflow = self.parts.hooks, self.parts.overflow
        online = self.options.online
        if online is not None:
            assert self.online_provider is not None
            purpose = RecordingProvider(self.online_provider, self.trace, purpose="probe")
            self.probe = HandoffProbe(self.scenario, self.session, purpose, online)

        async def recorded(agent: Agent, turn: int) -> None:
            threshold = engine.threshold(agent.config.context_window or DEFAULT_CONTEXT_WINDOW)
            before = engine.next_request_tokens()
            passes = len(self.passes)
            await pre_step(agent, turn)
            ran = len(self.passes) - passes
            if before >= threshold or ran:
                after = engine.next_request_tokens()  # the recall tools a pass brings too
                step = self.trace.conversation_calls
                self.crossings.append(Crossing(step, before, threshold, ran, after))
            if ran and self.probe is not None:
                await self.probe.after_pass(agent, turn, self.passes[-1].number)

        return [recorded], overflow

    def _agent(self) -> Agent:
        hooks, overflow = self._hooks()
        root = Path(f"{DISPLAY_ROOT}/{self.scenario.name}")
        return Agent(
            self.session,
            self.provider,
            self.parts.tools,
            ApprovalPolicy("auto"),
            config=AgentConfig(
                provider="scripted",
                model="scripted",
                system=system_prompt(root, BENCH_ENVIRONMENT),
                recall=self.parts.recall,
                context_window=self.scenario.window,
                max_steps=50,
                retry_base_delay=0.0,
                max_overflow_retries=self.settings.max_overflow_retries,
            ),
            workspace=self.workspace,
            pre_step_hooks=hooks,
            overflow_handler=overflow,
        )

    async def drive(self, progress: Progress | None) -> RunResult:
        agent = self._agent()
        engine, turns = self.engine, self.scenario.turns
        started = time.perf_counter()
        error = None
        for number, turn in enumerate(turns, start=1):
            result = await agent.run_turn(turn.prompt)
            if result.reason != "completed":
                error = f"turn {number} ended {result.reason}: {result.error}"
                break
            if progress is not None:
                progress(number, len(turns), len(self.passes))
        log = RunLog(
            session=self.session,
            trace=self.trace,
            requests=self.provider.requests,
            passes=self.passes,
            crossings=self.crossings,
            warnings=len(engine.warnings) if engine else 0,
            refusals=len(self.refusals),
            recall_offered=self.arm in RECALL_ARMS,
            wall_s=time.perf_counter() - started,
            error=error,
            online=self.probe.summary() if self.probe is not None else None,
        )
        return score_run(self.scenario, self.arm, log, settings=self.settings, options=self.options)


def make_online_provider(online: OnlineOptions) -> Provider:
    """The real provider for online mode (raises ``MissingApiKeyError`` without a key): its key
    from the variable ``online.api_key_env`` names, else a key in ``[provider]`` when that is
    the provider run (never written to meta), else the provider's own variable, by the rule of
    ``dsh.llm.registry.route_api_key``. The ``[provider.headers]`` go with it when it is the
    configured provider, as they go with a session's route."""
    from dsh.config import load_settings
    from dsh.llm.registry import make_provider

    configured = load_settings().provider
    own = online.api_key_env is None and configured.name == online.provider
    provider, _, _ = make_provider(
        online.provider,
        model=online.model,
        base_url=online.base_url,
        api_key=configured.api_key if own else None,
        api_key_env=online.api_key_env,
        environ=os.environ,
        headers=configured.headers if configured.name == online.provider else None,
    )
    return provider
