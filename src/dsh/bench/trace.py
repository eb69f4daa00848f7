"""Recording what a bench run sends: every request in send order, as cache segments.

``Trace`` holds one ``CallRecord`` per model request — conversation calls (through
``RecordingProvider``), summariser calls (``RecordingProvider`` around a real summariser's
provider online; ``SimulatedSummarizer`` offline), and online probe calls — plus the order in
which requests were sent and replies finished, so every cache rule can be replayed afterwards
over exactly the same sequence (``replay``). Segments are interned: a message seen in many
requests is serialised and hashed once, and each request keeps only short keys.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from dsh.bench.cache_rules import CacheSimulator, Served
from dsh.compaction.model_summarizer import OUTPUT_TOKEN_SLACK
from dsh.compaction.prompts import instruction_for
from dsh.compaction.summarizer import Summarizer, SummaryOutput, SummaryTask
from dsh.events import (
    Event,
    Message,
    ModelSource,
    TextBlock,
    Usage,
    UserSource,
    encode_json,
    is_compact_checkpoint_source,
)
from dsh.llm.assemble import StreamAssembler
from dsh.llm.cache_sim import Segment, message_segment
from dsh.llm.types import ModelRequest, Provider, StreamEvent
from dsh.surface.tokens import system_tokens, tools_tokens

CallPurpose = Literal["conversation", "compaction", "probe"]
STUB_TAG = "<compacted-index-stub>"


def checkpoint_class(message: Message) -> str | None:
    """``index`` for an index stub, ``state`` for a state checkpoint or a basic summary, None
    for an ordinary message."""
    if not is_compact_checkpoint_source(message.source):
        return None
    return "index" if STUB_TAG in message.text() else "state"


@dataclass(slots=True)
class CallRecord:
    purpose: CallPurpose
    segments: list[Segment]
    breakpoints: tuple[int, ...]
    """Anthropic cache breakpoints as dsh places them: the system block and the last message."""
    input_tokens: int
    step: int
    """Conversation requests sent before this one."""
    stub_end: int | None = None
    """Segment index of the last index stub (a what-if breakpoint), None without stubs."""
    output_tokens: int = 0
    reply: Segment | None = None
    reported: Usage | None = None
    """Usage reported by the provider (real providers online; the scripted heuristic offline)."""
    first_after: list[int] = field(default_factory=list)
    """Pass numbers this conversation request is the first request after."""


class Trace:
    def __init__(self) -> None:
        self.calls: list[CallRecord] = []
        self.ops: list[tuple[Literal["request", "response"], int]] = []
        self.pending_passes: list[int] = []
        self.conversation_calls = 0
        self._by_object: dict[int, tuple[Message, Segment]] = {}
        self._keys: dict[bytes, str] = {}

    # ---- segments -----------------------------------------------------------------------------

    def _key(self, text: str) -> str:
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
        key = self._keys.get(digest)
        if key is None:
            key = self._keys[digest] = f"s{len(self._keys)}"
        return key

    def message(self, message: Message) -> Segment:
        """The interned segment of a message (serialised once per message object)."""
        known = self._by_object.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        text, tokens = message_segment(message)
        segment = (self._key(text), tokens)
        self._by_object[id(message)] = (message, segment)
        return segment

    def segments(self, request: ModelRequest) -> tuple[list[Segment], tuple[int, ...]]:
        """The request's segments (tools, system, messages) and its Anthropic breakpoints."""
        return self._segments(request)[:2]

    def _segments(self, request: ModelRequest) -> tuple[list[Segment], tuple[int, ...], int | None]:
        segments: list[Segment] = []
        if request.tools:
            text = "tools:" + encode_json(list(request.tools)).decode()
            segments.append((self._key(text), tools_tokens(request.tools)))
        breakpoints = []
        if request.system is not None:
            segments.append((self._key("system:" + request.system), system_tokens(request.system)))
            breakpoints.append(len(segments) - 1)
        first = len(segments)
        segments.extend(self.message(m) for m in request.messages)
        if request.messages:
            breakpoints.append(len(segments) - 1)
        stubs = [i for i, m in enumerate(request.messages) if checkpoint_class(m) == "index"]
        stub_end = first + stubs[-1] if stubs else None
        return segments, tuple(dict.fromkeys(breakpoints)), stub_end

    # ---- calls --------------------------------------------------------------------------------

    def begin(self, request: ModelRequest, purpose: CallPurpose | None = None) -> int:
        segments, breakpoints, stub_end = self._segments(request)
        kind: CallPurpose = purpose or request.purpose
        record = CallRecord(
            purpose=kind,
            segments=segments,
            breakpoints=breakpoints,
            input_tokens=sum(t for _, t in segments),
            step=self.conversation_calls,
            stub_end=stub_end,
        )
        if kind == "conversation":
            record.first_after, self.pending_passes = self.pending_passes, []
            self.conversation_calls += 1
        self.calls.append(record)
        self.ops.append(("request", len(self.calls) - 1))
        return len(self.calls) - 1

    def end(self, index: int, reply: Message | None, usage: Usage | None = None) -> None:
        record = self.calls[index]
        record.reported = usage
        if reply is not None:
            record.reply = self.message(reply)
            record.output_tokens = record.reply[1]
        self.ops.append(("response", index))

    def replay(self, rule: CacheSimulator, *, stub_breakpoint: bool = False) -> list[Served]:
        """Serve every recorded request (probe calls aside) through ``rule`` in send order;
        ``stub_breakpoint`` adds a breakpoint after the last index stub (a what-if for
        Anthropic: dsh marks only the system block and the last message)."""
        served: list[Served] = [Served()] * len(self.calls)
        for op, index in self.ops:
            record = self.calls[index]
            if record.purpose == "probe":  # measurement, not part of the session
                continue
            if op == "request":
                points = record.breakpoints
                if stub_breakpoint and record.stub_end is not None:
                    points = tuple(sorted({*points, record.stub_end}))
                served[index] = rule.request(record.segments, points)
            elif record.reply is not None:
                rule.response([*record.segments, record.reply])
        return served


class RecordingProvider:
    """A ``Provider`` that records every request and reply in a ``Trace``."""

    def __init__(
        self, inner: Provider, trace: Trace, *, purpose: CallPurpose | None = None
    ) -> None:
        self.inner = inner
        self.trace = trace
        self.name = inner.name
        self.purpose = purpose
        self.requests: list[ModelRequest] = []
        """Conversation requests, as sent (the scorers read them)."""

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        index = self.trace.begin(request, self.purpose)
        if self.trace.calls[index].purpose == "conversation":
            self.requests.append(request)
        return self._relay(self.inner.stream(request, history=history), index, request.model)

    async def _relay(
        self, events: AsyncIterator[StreamEvent], index: int, model: str
    ) -> AsyncIterator[StreamEvent]:
        assembler = StreamAssembler()
        async for event in events:
            assembler.feed(event)
            yield event
        reply = assembler.message(f"reply-{index}", self.name, model)
        self.trace.end(index, reply, assembler.usage)


def summary_request(task: SummaryTask, provider: str, model: str) -> ModelRequest:
    """The request ``ModelSummarizer`` sends for ``task`` (same system, tools, messages, and
    instruction), so an offline run can bill what a model summariser would be sent."""
    instruction = Message(
        id="compaction-instruction",
        role="user",
        content=(TextBlock(text=instruction_for(task)),),
        source=UserSource(),
    )
    return ModelRequest(
        provider=provider,
        model=model,
        system=task.system,
        tools=task.tools,
        messages=(*task.messages, instruction),
        params={"max_tokens": task.max_tokens * OUTPUT_TOKEN_SLACK},
        purpose="compaction",
    )


class SimulatedSummarizer:
    """Offline summariser: the text comes from ``inner`` (extractive), while the trace records
    the model call a ``ModelSummarizer`` would have made for the same task, and each call waits
    ``latency`` seconds, so wall time per pass shows what concurrency buys."""

    def __init__(
        self,
        inner: Summarizer,
        trace: Trace,
        *,
        latency: float,
        provider: str = "simulated",
        model: str = "summariser",
    ) -> None:
        self.inner = inner
        self.trace = trace
        self.latency = latency
        self.provider = provider
        self.name = inner.name
        self.model = inner.model
        self._model = model

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        index = self.trace.begin(summary_request(task, self.provider, self._model))
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        output = await self.inner.summarize(task)
        reply = Message(
            id=f"summary-{index}",
            role="assistant",
            content=(TextBlock(text=output.text),),
            source=ModelSource(provider=self.provider, model=self._model),
        )
        self.trace.end(index, reply)
        return output
