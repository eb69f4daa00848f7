"""The instruments of ``compaction_basic.py`` and ``recallable.py``, set on objects the
benchmark built itself (nothing in ``src`` is patched):

* ``RecordingProvider``: wraps the ``ScriptedProvider`` and runs a ``DeepSeekCache`` over every
  request it receives, conversation and compaction calls alike, in the order they are sent:
  ``serve`` when the stream starts, ``save_output`` with the reply when it ends;
* ``Probe``: wraps ``CompactionEngine.run_pass``, ``backend.plan`` and the summariser's
  ``summarize`` on the live objects, so each landed pass gets its tokens before/after, its
  checkpoints, the engine's own time (plan + run_pass - time inside the summariser) and the
  first conversation request sent after it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh.agent import Agent
from dsh.compaction import (
    CompactionEngine,
    PassResult,
)
from dsh.compaction.prompts import instruction_for
from dsh.compaction.summarizer import Summarizer, SummaryOutput, SummaryTask
from dsh.events import Event, Message, TextBlock, UserSource
from dsh.llm.assemble import StreamAssembler
from dsh.llm.cache_sim import DeepSeekCache, message_segment, request_segments
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.surface import checkpoint_kind, message_tokens
from dsh.surface.tokens import system_tokens, tools_tokens

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
    """Tokens of the request ``ModelSummarizer`` sends for ``task`` (the token heuristic of
    docs/architecture.md, "Token accounting")."""
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
