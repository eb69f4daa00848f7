"""Shared by ``compaction_basic.py`` and ``recallable.py``: one scripted long session driven
through the real ``Agent`` with automatic compaction, instrumented from the outside.

What is here:

* the session: a seeded script of turns with 1-3 steps (small ``read_file``/``list_dir``/
  ``glob``/``grep`` calls on a temporary workspace, assistant text of a few sentences) with
  planted facts (``ZEBRA-7731``, ``port = 8123``, an exact error string, a path, a config
  ``key = value``, a second ticket id), each appearing exactly once in the whole session;
* ``RecordingProvider``: wraps the ``ScriptedProvider`` and runs a ``DeepSeekCache`` over every
  request it receives, conversation and compaction calls alike, in the order they are sent:
  ``serve`` when the stream starts, ``save_output`` with the reply when it ends;
* ``Probe``: wraps ``CompactionEngine.run_pass``, ``backend.plan`` and the summariser's
  ``summarize`` on the live objects, so each landed pass gets its tokens before/after, its
  checkpoints, the engine's own time (plan + run_pass - time inside the summariser) and the
  first conversation request sent after it;
* cost, recall (``dsh.recall`` when importable) and small formatting helpers.

Nothing in ``src`` is patched: every wrapper is an instance attribute on objects the benchmark
built itself.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import re
import statistics
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh.agent import Agent, AgentConfig, system_prompt
from dsh.agent.hooks import compaction_hooks
from dsh.compaction import (
    BasicBackend,
    CompactionEngine,
    ExtractiveSummarizer,
    ModelSummarizer,
    PassResult,
    RecallableBackend,
)
from dsh.compaction.prompts import instruction_for, join_pass_answer
from dsh.compaction.summarizer import Summarizer, SummaryOutput, SummaryTask
from dsh.config import CompactionSettings
from dsh.events import Event, Message, TextBlock, UserSource
from dsh.llm.assemble import StreamAssembler
from dsh.llm.cache_sim import DeepSeekCache, message_segment, request_segments
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.llm.types import Finish, ModelRequest, StreamEvent, TextDelta
from dsh.store import MemoryStore
from dsh.surface import Session, checkpoint_kind, message_tokens
from dsh.surface.tokens import system_tokens, tools_tokens
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext
from dsh.tools.registry import ToolRegistry, default_tools

# ---- the workspace ----------------------------------------------------------------------------

WORKSPACE = {
    "README.md": "# importer\n\nNightly CSV importer for the catalogue service.\n\n"
    + "".join(f"- step {i}: parse, validate, upsert batch {i}\n" for i in range(12)),
    "pyproject.toml": '[project]\nname = "importer"\nversion = "0.4.1"\n'
    'dependencies = ["httpx", "pydantic"]\n',
    "src/importer/__init__.py": '"""importer."""\n\nfrom importer.core import run, parse_row\n',
    "src/importer/core.py": "".join(
        f"def step_{i}(row: dict) -> dict:\n    row['s{i}'] = row.get('s{i}', 0) + {i}\n"
        f"    return row\n\n\n"
        for i in range(24)
    )
    + "def parse_row(line: str) -> dict:\n    return dict(zip(COLUMNS, line.split(',')))\n\n\n"
    "def run(lines):\n    return [parse_row(line) for line in lines if line.strip()]\n",
    "src/importer/util.py": "import os\n\n\ndef env(name, default=''):\n"
    "    return os.environ.get(name, default)\n\n\ndef chunks(items, size):\n"
    "    for i in range(0, len(items), size):\n        yield items[i : i + size]\n",
    "tests/test_core.py": "from importer import parse_row, run\n\n\n"
    + "".join(
        f"def test_case_{i}():\n    assert run(['a,b,{i}']) == [parse_row('a,b,{i}')]\n\n\n"
        for i in range(8)
    ),
    "docs/notes.md": "\n".join(f"- note {i}: keep the importer idempotent" for i in range(30))
    + "\n",
    # Planted files: each is read exactly once in the whole session (at its planted turn).
    "deploy/service.toml": '[service]\nname = "importer"\nport = 8123\nworkers = 3\n'
    'log_level = "info"\n',
    "logs/ingest-2231.log": "2025-04-12T02:10:01 start batch 2231\n"
    "2025-04-12T02:10:07 ChecksumError: block 0x3f2a expected 9c41e0 got 77d2b3\n"
    "2025-04-12T02:10:07 batch 2231 aborted after 1180 rows\n",
}
COMMON_FILES = sorted(name for name in WORKSPACE if not name.startswith(("deploy/", "logs/")))


@dataclass(frozen=True, slots=True)
class Fact:
    anchor: str
    """The exact literal a later ``history_search`` must find."""
    where: str
    """``user``, ``assistant`` or ``tool`` (a file read once)."""
    at: float
    """Position in the session (share of the turns)."""


FACTS = (
    Fact("ZEBRA-7731", "user", 0.02),
    Fact("port = 8123", "tool", 0.08),
    Fact("ChecksumError: block 0x3f2a expected 9c41e0 got 77d2b3", "tool", 0.15),
    Fact("src/importer/codec_v2_shim.py", "assistant", 0.30),
    Fact("max_batch_rows = 4096", "assistant", 0.50),
    Fact("KESTREL-0419", "user", 0.70),
)


def make_workspace(root: Path) -> None:
    for name, text in WORKSPACE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# ---- the script -------------------------------------------------------------------------------

FUNCS = [f"step_{i}" for i in range(24)] + ["parse_row", "run", "env", "chunks"]
SENTENCES = (
    "I read {file} and {fn} looks fine; it is only called from {file2}.",
    "The tests in tests/test_core.py cover {fn} but not the empty-input case.",
    "Next I will check how {fn} handles rows with missing columns.",
    "There is still a TODO in {file} about caching the parsed header.",
    "I will use the existing helper in src/importer/util.py rather than adding a dependency.",
    "Nothing else in the workspace refers to {fn}, so the change stays local.",
    "The batch size is read from the environment, so the defaults in {file} only matter locally.",
    "{fn} mutates its argument; callers in {file2} rely on that, so I am not changing it.",
    "I checked the docs in docs/notes.md: the importer must stay idempotent across reruns.",
    "Running the whole suite is not needed here; the change touches {fn} only.",
)
ASKS = (
    "check whether {fn} in {file} handles empty rows",
    "look at {file} and tell me what {fn} does",
    "see if anything in {file} still uses {fn}",
    "review the tests around {fn} and list what is missing",
    "find where the batch size is configured",
    "summarise what {file} is for",
)


def _fill(template: str, rng: random.Random) -> str:
    file, file2 = rng.sample(COMMON_FILES, 2)
    return template.format(fn=rng.choice(FUNCS), file=file, file2=file2)


def _assistant_text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(_fill(rng.choice(SENTENCES), rng) for _ in range(rng.randint(low, high)))


def _tool_call(rng: random.Random) -> dict[str, Any]:
    kind = rng.choices(["read", "window", "list", "glob", "grep"], weights=[6, 2, 2, 1, 1])[0]
    if kind == "read":
        return {"name": "read_file", "arguments": {"path": rng.choice(COMMON_FILES)}}
    if kind == "window":
        args = {"path": "src/importer/core.py", "offset": rng.randint(1, 100), "limit": 15}
        return {"name": "read_file", "arguments": args}
    if kind == "list":
        where = rng.choice([".", "src/importer", "tests", "docs"])
        return {"name": "list_dir", "arguments": {"path": where}}
    if kind == "glob":
        return {"name": "glob", "arguments": {"pattern": rng.choice(["**/*.py", "*.md"])}}
    return {"name": "grep", "arguments": {"pattern": rng.choice(["def run", "import os"])}}


@dataclass
class Script:
    prompts: list[str]
    entries: list[dict[str, Any]]
    planted: dict[str, int]
    """Anchor -> turn (1-based) it was planted in."""


def make_script(turns: int, seed: int) -> Script:
    """A deterministic session: turns of 1-3 steps; every step but the last calls 1-2 tools."""
    rng = random.Random(seed)
    plant_at = {max(1, round(fact.at * turns)): fact for fact in FACTS}
    prompts: list[str] = []
    entries: list[dict[str, Any]] = []
    planted: dict[str, int] = {}
    for turn in range(1, turns + 1):
        fact = plant_at.get(turn)
        prompt = f"Turn {turn}: " + _fill(rng.choice(ASKS), rng) + "."
        steps = rng.choices([1, 2, 3], weights=[2, 5, 3])[0]
        calls_per_step = [[_tool_call(rng) for _ in range(rng.randint(1, 2))] for _ in range(3)]
        final = _assistant_text(rng, 2, 6)
        if fact is not None:
            planted[fact.anchor] = turn
            if fact.where == "user":
                prompt += f" The ticket is {fact.anchor}; keep it in mind for later."
            elif fact.where == "assistant":
                final += f" Decision: {_decision(fact.anchor)}"
            else:
                path = "deploy/service.toml" if "port" in fact.anchor else "logs/ingest-2231.log"
                steps = max(steps, 2)
                calls_per_step[0] = [{"name": "read_file", "arguments": {"path": path}}]
        prompts.append(prompt)
        for step in range(1, steps):
            entry: dict[str, Any] = {"toolCalls": calls_per_step[step - 1]}
            if rng.random() < 0.6:
                entry["text"] = _assistant_text(rng, 1, 1)
            entries.append(entry)
        entries.append({"text": final})
    return Script(prompts, entries, planted)


def _decision(anchor: str) -> str:
    if "=" in anchor:
        return f"we will set {anchor} in the importer settings from now on."
    return f"the fallback lives in {anchor}; we will leave it alone."


def summary_text(settings: CompactionSettings) -> str:
    """What the scripted *model* summariser answers to every compaction call: three prose lines
    and a keyword line (a stub keeps exactly these), then state sections sized to about 3/4 of
    ``state_max_tokens`` (the state and the basic summary keep everything, capped)."""
    lines = [
        "User asked to review the importer modules and their tests.",
        "Assistant read core.py, util.py and the tests; no code was changed.",
        "Outcome: the helpers behave as documented; one TODO about header caching remains.",
        "Keywords — path: src/importer/core.py; id: parse_row",
        "## Goal",
        "- Keep the nightly importer correct and idempotent.",
        "## Decisions",
    ]
    target = settings.state_max_tokens * 3
    i = 0
    while sum(len(line) + 1 for line in lines) < target - 200:
        lines.append(f"- step_{i % 24} keeps mutating its row argument; callers rely on it ({i}).")
        i += 1
    lines += ["## Current state", "- Reviewing.", "## Constraints", "- (none)", "## Next steps"]
    lines.append("- Continue the review.")
    return "\n".join(lines)


class FollowingSummaries(ScriptedProvider):
    """The scripted conversation, and a model summariser that follows the instruction's layout
    (after ``delay_ms``): a one-call pass gets one section per marker line it names (a stub's
    lines, the state), a stub call a stub's lines, any other call all of ``text`` (a stub's
    lines, then the state's sections) — as a model that does what it is asked would."""

    def __init__(self, entries: Any, *, model: str, text: str, delay_ms: int) -> None:
        super().__init__(entries, model=model)
        lines = text.splitlines()
        cut = lines.index("## Goal")
        self.text, self.stub, self.state = text, "\n".join(lines[:cut]), "\n".join(lines[cut:])
        self.delay_ms = delay_ms

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        if request.purpose != "compaction":
            return super().stream(request, history=history)
        self.requests.append(request)
        return self._answer(request.messages[-1].text())

    async def _answer(self, instruction: str) -> AsyncIterator[StreamEvent]:
        await asyncio.sleep(self.delay_ms / 1000)
        labels = re.findall(r"^=== (stub \d+|state) ===", instruction, re.M)
        if labels:
            text = join_pass_answer((a, self.state if a == "state" else self.stub) for a in labels)
        elif "Index " in instruction:
            text = self.stub
        else:
            text = self.text
        yield TextDelta(text)
        yield Finish("stop")


# ---- timing -----------------------------------------------------------------------------------


class Span:
    """Wall time during which at least one timed call was running (overlaps count once)."""

    def __init__(self) -> None:
        self.elapsed = 0.0
        self._active = 0
        self._since = 0.0

    def enter(self) -> None:
        if self._active == 0:
            self._since = time.perf_counter()
        self._active += 1

    def exit(self) -> None:
        self._active -= 1
        if self._active == 0:
            self.elapsed += time.perf_counter() - self._since


# ---- the recording provider ---------------------------------------------------------------------


@dataclass
class Call:
    """One model request as the simulated provider cache saw it."""

    purpose: str
    """``conversation`` or ``compaction``."""
    number: int
    """Conversation calls before this one (the step counter of the session)."""
    input_tokens: int
    hit: int
    output_tokens: int = 0
    prefix_kept: int = 0
    """Tokens of the leading segments shared with the previous conversation request (what an
    LCP cache would reuse); conversation calls only."""
    first_after: list[int] = field(default_factory=list)
    """Pass numbers this request is the first conversation request after."""

    @property
    def uncached(self) -> int:
        return self.input_tokens - self.hit


class RecordingProvider:
    """The ``Provider`` protocol around a ``ScriptedProvider``; simulates DeepSeek's cache over
    every request in send order and records each one as a ``Call``. A provider caches per
    model: a summariser on another model than the conversation's never reads the
    conversation's cached prefix, so each model gets a cache of its own."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.caches: dict[str, DeepSeekCache] = {}
        self.calls: list[Call] = []
        self.pending_passes: list[int] = []
        self._conversation = 0
        self._previous: list[tuple[str, int]] = []

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        segments = request_segments(request)
        cache = self.caches.setdefault(request.model, DeepSeekCache())
        hit = cache.serve(segments)
        call = Call(request.purpose, self._conversation, sum(t for _, t in segments), hit)
        if request.purpose == "conversation":
            call.prefix_kept = _common_prefix_tokens(self._previous, segments)
            call.first_after, self.pending_passes = self.pending_passes, []
            self._previous = segments
            self._conversation += 1
        self.calls.append(call)
        return self._relay(self.inner.stream(request, history=history), segments, call, cache)

    async def _relay(
        self,
        events: AsyncIterator[StreamEvent],
        segments: list[tuple[str, int]],
        call: Call,
        cache: DeepSeekCache,
    ) -> AsyncIterator[StreamEvent]:
        assembler = StreamAssembler()
        async for event in events:
            assembler.feed(event)
            yield event
        reply = assembler.message("reply", self.name, self.inner.model)
        cache.save_output([*segments, message_segment(reply)])
        call.output_tokens = message_tokens(reply)


def _common_prefix_tokens(a: Sequence[tuple[str, int]], b: Sequence[tuple[str, int]]) -> int:
    total = 0
    for (text_a, tokens), (text_b, _) in zip(a, b, strict=False):
        if text_a != text_b:
            break
        total += tokens
    return total


# ---- the probe ----------------------------------------------------------------------------------


@dataclass
class PassRecord:
    number: int
    turn: int | None
    step: int
    """Conversation requests sent before the pass."""
    tokens_before: int
    tokens_after: int
    stubs: int
    """Index checkpoints this pass committed."""
    new_stub_tokens: int
    stub_region_tokens: int
    """Tokens of every index checkpoint on the surface after the pass."""
    state_tokens: int
    plan_s: float
    run_pass_s: float
    summarize_s: float
    """Wall time inside the summariser (concurrent calls counted once)."""
    call_s: list[float]
    """Duration of each summariser call of the pass."""
    summariser_input_tokens: int
    """Tokens of the requests a model summariser gets for this pass (the real ones for a model
    summariser; what ``ModelSummarizer`` would send for the extractive one)."""
    first_request: Call | None = None

    @property
    def engine_s(self) -> float:
        """The engine's own time: planning + run_pass, minus time inside the summariser."""
        return self.plan_s + self.run_pass_s - self.summarize_s


def summariser_request_tokens(task: SummaryTask) -> int:
    """Tokens of the request ``ModelSummarizer`` sends for ``task`` (spec §3 heuristic)."""
    instruction = Message(
        id="i", role="user", content=(TextBlock(text=instruction_for(task)),), source=UserSource()
    )
    return (
        tools_tokens(task.tools)
        + system_tokens(task.system)
        + sum(message_tokens(m) for m in task.messages)
        + message_tokens(instruction)
    )


class Probe:
    """Times and records the passes of one engine (wrappers set as instance attributes)."""

    def __init__(
        self, engine: CompactionEngine, summarizer: Summarizer, provider: RecordingProvider
    ) -> None:
        self.engine = engine
        self.session = engine.session
        self.provider = provider
        self.passes: list[PassRecord] = []
        self.refused: list[str] = []
        self.plans = 0
        self.summarize_calls = 0
        """Every summariser call, refused attempts included."""
        self.plan_none = 0
        self.hook_s = 0.0
        self.hook_summarize_s = 0.0
        self.pre_steps_with_pass: dict[int, int] = {}
        self.warned_at: list[tuple[int, int]] = []
        """(turn, conversation step) of each "still above threshold" warning."""
        self._plan_s = 0.0
        self._span = Span()
        self._call_s: list[float] = []
        self._input_tokens = 0
        backend = engine.backend
        inner_plan, inner_run = backend.plan, engine.run_pass
        inner_summarize = summarizer.summarize

        def plan(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                result = inner_plan(*args, **kwargs)
            finally:
                self._plan_s = time.perf_counter() - started
            self.plans += 1
            self.plan_none += result is None
            return result

        async def summarize(task: SummaryTask) -> SummaryOutput:
            self._input_tokens += summariser_request_tokens(task)
            self.summarize_calls += 1
            self._span.enter()
            started = time.perf_counter()
            try:
                return await inner_summarize(task)
            finally:
                self._call_s.append(time.perf_counter() - started)
                self._span.exit()

        async def run_pass(*args: Any, **kwargs: Any) -> PassResult:
            summarized_before = self._span.elapsed
            self._call_s, self._input_tokens = [], 0
            started = time.perf_counter()
            try:
                result = await inner_run(*args, **kwargs)
            except Exception as exc:
                self.refused.append(str(exc))
                raise
            elapsed = time.perf_counter() - started
            summarized = self._span.elapsed - summarized_before
            self._record(result, kwargs.get("turn"), elapsed, summarized)
            return result

        backend.plan = plan  # type: ignore[method-assign]
        summarizer.summarize = summarize  # type: ignore[method-assign]
        engine.run_pass = run_pass  # type: ignore[method-assign]

    def wrap_hook(self, hook: Callable[[Agent, int], Any]) -> Callable[[Agent, int], Any]:
        """The pre-step hook, timed as a whole (measure + prune + plan + passes)."""

        async def timed(agent: Agent, turn: int) -> None:
            passes, summarized = len(self.passes), self._span.elapsed
            warnings = len(self.engine.warnings)
            started = time.perf_counter()
            await hook(agent, turn)
            self.hook_s += time.perf_counter() - started
            self.hook_summarize_s += self._span.elapsed - summarized
            if len(self.passes) > passes:
                self.pre_steps_with_pass[self.provider._conversation] = len(self.passes) - passes
            if len(self.engine.warnings) > warnings:
                self.warned_at.append((turn, self.provider._conversation))

        return timed

    def _record(self, result: PassResult, turn: int | None, run_s: float, summ_s: float) -> None:
        session = self.session
        new_stubs = [c for c in result.checkpoints if c.kind == "index"]
        stub_region = state = 0
        for seq in session.nodes:
            kind = checkpoint_kind(session, seq)
            if kind == "index":
                stub_region += session.node_tokens(seq)
            elif kind == "state":
                state += session.node_tokens(seq)
        number = len(self.passes) + 1
        self.passes.append(
            PassRecord(
                number=number,
                turn=turn,
                step=self.provider._conversation,
                tokens_before=result.tokens_before,
                tokens_after=result.tokens_after,
                stubs=len(new_stubs),
                new_stub_tokens=sum(session.node_tokens(c.checkpoint_seq) for c in new_stubs),
                stub_region_tokens=stub_region,
                state_tokens=state,
                plan_s=self._plan_s,
                run_pass_s=run_s,
                summarize_s=summ_s,
                call_s=list(self._call_s),
                summariser_input_tokens=self._input_tokens,
            )
        )
        self.provider.pending_passes.append(number)

    def link_first_requests(self) -> None:
        by_number = {p.number: p for p in self.passes}
        for call in self.provider.calls:
            for number in call.first_after:
                by_number[number].first_request = call


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
            system=system_prompt(workspace),
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
