"""Recording what a bench run sends: every request in send order, as cache segments.

``Trace`` holds one ``CallRecord`` per model request — conversation calls (through
``RecordingProvider``), summariser calls (``RecordingProvider`` around a real summariser's
provider online; ``SimulatedSummarizer`` offline, which records the request that
``dsh.compaction.model_summarizer.build_summary_request`` builds, the one ``ModelSummarizer``
sends),
and online probe calls — plus the order in which requests were sent and replies finished, so
every cache rule can be replayed afterwards over exactly the same sequence (``replay``).

Each request is kept in two views: one segment per message (DeepSeek, OpenAI) and one segment
per content block as ``dsh.llm.anthropic`` puts them on the wire, with the breakpoints it marks
(Anthropic: the system block, the end of the frozen stub region, the last block). Segments are
interned: a message seen in many requests is serialised and hashed once, and each request keeps
only short keys. Each call also carries a simulated time: the
conversation requests sent before it × ``step_seconds``.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from dsh.bench.cache_rules import CacheSimulator, Served
from dsh.bench.options import STEP_SECONDS
from dsh.compaction.model_summarizer import build_summary_request
from dsh.compaction.summarizer import Summarizer, SummaryOutput, SummaryTask
from dsh.events import (
    Event,
    Message,
    ModelSource,
    ReasoningBlock,
    TextBlock,
    Usage,
    encode_json,
    is_compact_checkpoint_source,
)
from dsh.llm.anthropic_wire import stub_region_end, to_wire_messages
from dsh.llm.assemble import StreamAssembler
from dsh.llm.cache_sim import Segment, message_segment
from dsh.llm.types import ModelRequest, Provider, StreamEvent
from dsh.surface.tokens import MESSAGE_OVERHEAD, block_tokens, system_tokens, tools_tokens

CallPurpose = Literal["conversation", "compaction", "probe"]
STUB_TAG = "<compacted-index-stub>"
ROLLUP_TAG = "<compacted-rollup>"
"""A code rollup of the oldest stubs: frozen like a stub, so it counts as one."""


def checkpoint_class(message: Message) -> str | None:
    """``index`` for an index stub or a rollup of stubs, ``state`` for a state checkpoint or a
    basic summary, None for an ordinary message."""
    if not is_compact_checkpoint_source(message.source):
        return None
    text = message.text()
    return "index" if STUB_TAG in text or ROLLUP_TAG in text else "state"


@dataclass(frozen=True, slots=True)
class View:
    """A request as one provider sees it: segments, breakpoints, the last index stub."""

    segments: list[Segment]
    breakpoints: tuple[int, ...] = ()
    stub_end: int | None = None
    """Segment index that ends the frozen stub region, where ``dsh.llm.anthropic`` puts a
    breakpoint (in ``breakpoints`` of the blocks view), None without one."""

    @property
    def tokens(self) -> int:
        return sum(t for _, t in self.segments)


@dataclass(slots=True)
class CallRecord:
    purpose: CallPurpose
    messages: View
    """One segment per message (tools, system, messages)."""
    blocks: View
    """One segment per Anthropic content block, with the adapter's breakpoints."""
    step: int
    """Conversation requests sent before this one."""
    at: float = 0.0
    """Simulated seconds since the session started."""
    output_tokens: int = 0
    reply: Segment | None = None
    reported: Usage | None = None
    """Usage reported by the provider (real providers online; the scripted heuristic offline)."""
    first_after: list[int] = field(default_factory=list)
    """Pass numbers this conversation request is the first request after."""

    @property
    def input_tokens(self) -> int:
        return self.messages.tokens

    def view(self, name: str) -> View:
        return self.blocks if name == "blocks" else self.messages


class Trace:
    def __init__(self, *, step_seconds: float = STEP_SECONDS) -> None:
        self.step_seconds = step_seconds
        self.calls: list[CallRecord] = []
        self.ops: list[tuple[Literal["request", "response"], int]] = []
        self.pending_passes: list[int] = []
        self.conversation_calls = 0
        self._by_object: dict[int, tuple[Message, Segment, list[Segment]]] = {}
        self._keys: dict[bytes, str] = {}

    # ---- segments -----------------------------------------------------------------------------

    def _key(self, text: str) -> str:
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
        key = self._keys.get(digest)
        if key is None:
            key = self._keys[digest] = f"s{len(self._keys)}"
        return key

    def _interned(self, message: Message) -> tuple[Message, Segment, list[Segment]]:
        known = self._by_object.get(id(message))
        if known is not None and known[0] is message:
            return known
        text, tokens = message_segment(message)
        entry = (message, (self._key(text), tokens), self._wire_blocks(message))
        self._by_object[id(message)] = entry
        return entry

    def message(self, message: Message) -> Segment:
        """The interned segment of a message (serialised once per message object)."""
        return self._interned(message)[1]

    def _wire_blocks(self, message: Message) -> list[Segment]:
        """The message's Anthropic content blocks (``to_wire_messages``: reasoning and empty
        text dropped), each with the spec's token count; the message overhead goes on the
        first block."""
        wire = to_wire_messages([message])
        if not wire:
            return []
        blocks = [dict(b) for b in wire[0]["content"]]
        blocks[-1].pop("cache_control", None)
        kept = [
            b
            for b in message.content
            if not isinstance(b, ReasoningBlock) and not (isinstance(b, TextBlock) and not b.text)
        ]
        tokens = [block_tokens(b) for b in kept]
        if len(tokens) != len(blocks):  # the adapter changed its filter: heuristic per block
            tokens = [(len(encode_json(b)) + 3) // 4 for b in blocks]
        tokens[0] += MESSAGE_OVERHEAD
        role = wire[0]["role"]
        return [
            (self._key(f"block:{role}:" + encode_json(b).decode()), n)
            for b, n in zip(blocks, tokens, strict=True)
        ]

    def segments(self, request: ModelRequest) -> tuple[list[Segment], tuple[int, ...]]:
        """The request's message segments (tools, system, messages) and its Anthropic
        breakpoints counted in those segments (system block, last message)."""
        view = self._views(request)[0]
        return view.segments, view.breakpoints

    def _views(self, request: ModelRequest) -> tuple[View, View]:
        header: list[Segment] = []
        if request.tools:
            text = "tools:" + encode_json(list(request.tools)).decode()
            header.append((self._key(text), tools_tokens(request.tools)))
        system_at = None
        if request.system is not None:
            header.append((self._key("system:" + request.system), system_tokens(request.system)))
            system_at = len(header) - 1
        interned = [self._interned(m) for m in request.messages]
        messages = [*header, *(entry[1] for entry in interned)]
        stubs_end = stub_region_end(request.messages)
        blocks = list(header)
        stub_message = len(header) + stubs_end if stubs_end is not None else None
        stub_block = None
        for index, (_, _, wire) in enumerate(interned):
            blocks.extend(wire)
            if index == stubs_end and wire:
                stub_block = len(blocks) - 1
        points = [system_at] if system_at is not None else []
        if request.messages:
            points.append(len(messages) - 1)
        # As dsh.llm.anthropic marks them: the system block (only when the system prompt is not
        # empty), the end of the frozen stub region, and the last block.
        block_points = [system_at] if system_at is not None and request.system else []
        if stub_block is not None:
            block_points.append(stub_block)
        if len(blocks) > len(header):
            block_points.append(len(blocks) - 1)
        return (
            View(messages, tuple(dict.fromkeys(points)), stub_message),
            View(blocks, tuple(dict.fromkeys(block_points)), stub_block),
        )

    # ---- calls --------------------------------------------------------------------------------

    def begin(self, request: ModelRequest, purpose: CallPurpose | None = None) -> int:
        messages, blocks = self._views(request)
        kind: CallPurpose = purpose or request.purpose
        record = CallRecord(
            purpose=kind,
            messages=messages,
            blocks=blocks,
            step=self.conversation_calls,
            at=self.conversation_calls * self.step_seconds,
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

    def replay(self, rule: CacheSimulator, *, stub_breakpoint: bool = True) -> list[Served]:
        """Serve every recorded request (probe calls aside) through ``rule`` in send order, in
        the rule's view, at each call's simulated time; ``stub_breakpoint`` False drops the
        breakpoint after the last index stub (a what-if: the two breakpoints dsh sent before it
        marked the stub region)."""
        served: list[Served] = [Served()] * len(self.calls)
        for op, index in self.ops:
            record = self.calls[index]
            if record.purpose == "probe":  # measurement, not part of the session
                continue
            view = record.view(rule.view)
            if op == "request":
                points = view.breakpoints
                if not stub_breakpoint and view.stub_end is not None:
                    points = tuple(p for p in points if p != view.stub_end or p == points[-1])
                served[index] = rule.request(view.segments, points, record.at)
            elif record.reply is not None:
                rule.response([*record.messages.segments, record.reply], record.at)
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
        self.requests: list[ModelRequest] = []
        """Every request billed, as built."""

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        request = build_summary_request(task, provider=self.provider, model=self._model)
        self.requests.append(request)
        index = self.trace.begin(request)
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
