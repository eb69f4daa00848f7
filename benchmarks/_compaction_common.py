"""Shared by ``compaction_basic.py`` and ``recallable.py``: one scripted long session
(``_compaction_script``) driven through the real ``Agent`` with automatic compaction,
instrumented from the outside (``_compaction_probe``); its settings, cost, recall (``dsh.recall``
when importable) and small formatting helpers.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from _compaction_probe import Call, PassRecord, Probe, RecordingProvider
from _compaction_script import (
    FollowingSummaries,
    Script,
    make_script,
    make_workspace,
    summary_text,
)
from dsh.agent import Agent, AgentConfig, system_prompt
from dsh.agent.hooks import compaction_hooks
from dsh.bench.runner import BENCH_ENVIRONMENT
from dsh.compaction import (
    BasicBackend,
    CompactionEngine,
    ExtractiveSummarizer,
    ModelSummarizer,
    RecallableBackend,
)
from dsh.compaction.summarizer import Summarizer
from dsh.config import CompactionSettings
from dsh.llm.scripted import parse_script
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext
from dsh.tools.registry import ToolRegistry, default_tools

# ---- settings ---------------------------------------------------------------------------------


def basic_settings(
    window: int, *, retain: int | None = None, state: int | None = None
) -> CompactionSettings:
    """Threshold 0.8, retain window/6, summary budget window/10 (unless given)."""
    return CompactionSettings(
        backend="basic",
        threshold_ratio=0.8,
        retain_tokens=retain or window // 6,
        state_max_tokens=state or max(100, window // 10),
    )


def recallable_settings(
    window: int,
    *,
    retain: int | None = None,
    state: int | None = None,
    chunk: int | None = None,
    stub: int | None = None,
) -> CompactionSettings:
    """As ``basic_settings``, plus chunk window/8 and stub chunk/8 (unless given)."""
    chunk = chunk or max(100, window // 8)
    return CompactionSettings(
        backend="recallable",
        threshold_ratio=0.8,
        retain_tokens=retain or window // 6,
        chunk_tokens=chunk,
        stub_tokens=stub or max(20, chunk // 8),
        state_max_tokens=state or max(100, window // 10),
    )


def describe_settings(s: CompactionSettings, window: int) -> str:
    parts = [
        f"window {window:,}",
        f"threshold {s.threshold_ratio:g} ({int(window * s.threshold_ratio):,} tokens)",
        f"retain {s.retain_tokens:,}",
    ]
    if s.backend == "recallable":
        parts += [
            f"chunk {s.chunk_tokens:,}",
            f"stub {s.stub_tokens}",
            f"max concurrency {s.max_concurrency}",
        ]
    parts.append(f"state/summary max {s.state_max_tokens:,}")
    return ", ".join(parts)


# ---- one run ------------------------------------------------------------------------------------


@dataclass
class SessionRun:
    backend: str
    summarizer: str
    settings: CompactionSettings
    window: int
    turns: int
    script: Script
    session: Session
    calls: list[Call]
    probe: Probe
    warnings: list[str]
    wall_s: float

    @property
    def passes(self) -> list[PassRecord]:
        return self.probe.passes

    def conversation(self) -> list[Call]:
        return [c for c in self.calls if c.purpose == "conversation"]

    def compaction(self) -> list[Call]:
        return [c for c in self.calls if c.purpose == "compaction"]


def run_session(
    root: Path,
    settings: CompactionSettings,
    *,
    window: int,
    turns: int,
    seed: int,
    model_summarizer: bool = False,
    summary_delay_ms: int = 1000,
) -> SessionRun:
    """Drive ``turns`` scripted turns through the real loop with automatic compaction. The
    engine's "still above threshold" warnings are counted, not logged."""
    logging.getLogger("dsh.compaction").setLevel(logging.ERROR)
    workspace = root / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    make_workspace(workspace)
    script = make_script(turns, seed)
    session = Session.create(MemoryStore(), cwd=workspace)
    scripted = FollowingSummaries(
        parse_script(script.entries),
        model="scripted",
        text=summary_text(settings),
        delay_ms=summary_delay_ms,
    )
    provider = RecordingProvider(scripted)
    summarizer: Summarizer
    if model_summarizer:
        summarizer = ModelSummarizer(provider, "scripted-summarizer", history=session.events)
    else:
        summarizer = ExtractiveSummarizer()
    backend = (
        BasicBackend(summarizer, settings)
        if settings.backend == "basic"
        else RecallableBackend(summarizer, settings)
    )
    ids = itertools.count(1)
    engine = CompactionEngine(session, backend, settings, new_id=lambda: f"p{next(ids)}")
    probe = Probe(engine, summarizer, provider)
    pre_step, overflow = compaction_hooks(engine)
    agent = Agent(
        session,
        provider,
        ToolRegistry(default_tools()),
        ApprovalPolicy("auto"),
        config=AgentConfig(
            provider="scripted",
            model="scripted",
            system=system_prompt(workspace, BENCH_ENVIRONMENT),
            context_window=window,
            max_steps=10,
            retry_base_delay=0.0,
        ),
        workspace=workspace,
        pre_step_hooks=[probe.wrap_hook(pre_step)],
        overflow_handler=overflow,
    )

    async def drive() -> None:
        for prompt in script.prompts:
            result = await agent.run_turn(prompt)
            if result.reason != "completed":
                raise SystemExit(f"turn {result.turn} ended {result.reason}: {result.error}")

    started = time.perf_counter()
    asyncio.run(drive())
    wall = time.perf_counter() - started
    probe.link_first_requests()
    return SessionRun(
        backend=settings.backend,
        summarizer="model" if model_summarizer else "extractive",
        settings=settings,
        window=window,
        turns=turns,
        script=script,
        session=session,
        calls=provider.calls,
        probe=probe,
        warnings=list(engine.warnings),
        wall_s=wall,
    )


# ---- figures ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prices:
    """DeepSeek-like prices in $ per million tokens."""

    input: float = 0.28
    cached_ratio: float = 0.1
    output_ratio: float = 2.0

    def cost(self, calls: Sequence[Call]) -> float:
        uncached = sum(c.uncached for c in calls)
        cached = sum(c.hit for c in calls)
        output = sum(c.output_tokens for c in calls)
        return (
            (uncached + cached * self.cached_ratio + output * self.output_ratio) * self.input / 1e6
        )


def hit_ratio(calls: Sequence[Call]) -> float:
    total = sum(c.input_tokens for c in calls)
    return sum(c.hit for c in calls) / total if total else 0.0


def safety(run: SessionRun) -> dict[str, int]:
    """Loops and growth: passes that did not shrink the context, the most passes one pre-step
    ran, passes in back-to-back steps, warnings (still above threshold after the attempts)."""
    steps = sorted(run.probe.pre_steps_with_pass)
    back_to_back = sum(1 for a, b in itertools.pairwise(steps) if b - a <= 1)
    return {
        "grew": sum(p.tokens_after >= p.tokens_before for p in run.passes),
        "max_per_pre_step": max(run.probe.pre_steps_with_pass.values(), default=0),
        "back_to_back": back_to_back,
        "warnings": len(run.warnings),
        "refused": len(run.probe.refused),
    }


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# ---- recall -------------------------------------------------------------------------------------

_HIT = re.compile(r"\[(c\d+) #msg (\d+)\]")


@dataclass
class RecallResult:
    anchor: str
    turn: int
    rank: int | None
    """1-based rank of the first search hit whose ``history_read`` page holds the anchor."""
    hits: int


def recall_available() -> bool:
    try:
        import dsh.recall  # noqa: F401
    except ImportError:
        return False
    return True


def check_recall(run: SessionRun) -> list[RecallResult] | None:
    """For each planted anchor: ``history_search`` over the final log, then ``history_read`` of
    the hits (from the first) at the hit's message offset; None if ``dsh.recall`` is missing."""
    try:
        from dsh.recall import HistoryReadTool, HistorySearchTool
    except ImportError:
        return None
    events = run.session.events
    ctx = ToolContext(
        workspace=Path("."), session_id=run.session.id, call_id="recall", history=events
    )
    search, read = HistorySearchTool(), HistoryReadTool()

    async def one(anchor: str) -> tuple[int | None, int]:
        found = await search.run({"query": anchor, "limit": 200}, ctx)
        hits = _HIT.findall(found.text)
        for rank, (checkpoint, offset) in enumerate(hits[:5], start=1):
            page = await read.run({"checkpoint": checkpoint, "offset": int(offset)}, ctx)
            if not page.is_error and anchor in page.text:
                return rank, len(hits)
        return None, len(hits)

    results = []
    for anchor, turn in run.script.planted.items():
        rank, hits = asyncio.run(one(anchor))
        results.append(RecallResult(anchor, turn, rank, hits))
    return results
