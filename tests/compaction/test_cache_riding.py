"""Summariser calls ride the conversation's cache (docs/compaction.md, same section).

When the summariser is the conversation's own route, every stub and state call of a pass is the
last conversation request extended by what the surface gained since and one instruction naming
the slice; with a different summariser model the compact layout applies.
"""

from __future__ import annotations

import asyncio
import json
import re

import msgspec

from dsh.agent.hooks import compaction_hooks
from dsh.compaction import (
    CompactionEngine,
    ExtractiveSummarizer,
    RecallableBackend,
    build_summary_request,
)
from dsh.compaction.anchors import parse_keyword_line
from dsh.compaction.model_summarizer import SLICE_LEAD, as_transcript
from dsh.compaction.prompts import SUMMARISER_SYSTEM
from dsh.compaction.recallable.one_call import compact_pass_task
from dsh.compaction.summarizer import SummaryOutput, SummaryTask
from dsh.events import (
    CompactionPlanEvent,
    CompactionSummaryEvent,
    RequestConfig,
    RequestHeader,
    RequestHeaderBody,
    TextBlock,
    is_compact_checkpoint_source,
    surface_message,
)
from dsh.llm.anthropic_wire import to_wire_messages as anthropic_wire
from dsh.llm.openai_compat import to_wire_messages, tool_to_wire
from dsh.llm.types import ModelRequest
from dsh.transcript import render_message
from tests.agent.conftest import Harness, run
from tests.compaction.test_recallable import SETTINGS, assert_layout, long_session
from tests.helpers import (
    assistant_message,
    tool_call_block,
    tool_result_message,
    user_message,
)

RANGE = re.compile(r"messages #(\d+)–#(\d+)")
ROOMY = msgspec.structs.replace(
    SETTINGS, threshold_ratio=0.6, low_watermark_ratio=0.5, stub_region_ratio=0.3
)
"""Passes start at 60% of the window, so the conversation plus a call's output fits it, and
the many small stubs of these 400-token chunks have room to stay."""


class RouteSummarizer:
    """The extractive text, while recording the exact call a model on ``route`` would get."""

    def __init__(self, route: tuple[str, str]) -> None:
        self.name, self.model = route
        self.route = route
        self.requests: list[ModelRequest] = []
        self.tasks: list[SummaryTask] = []
        self._inner = ExtractiveSummarizer()

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        self.tasks.append(task)
        self.requests.append(build_summary_request(task, provider=self.name, model=self.model))
        return await self._inner.summarize(task)


def _wire(request: ModelRequest) -> tuple[str, str]:
    tools = json.dumps([tool_to_wire(t) for t in request.tools], sort_keys=True)
    messages = json.dumps(to_wire_messages(request, reasoning_back=True), sort_keys=True)
    return tools, messages


def _loop(harness: Harness, summarizer) -> tuple[CompactionEngine, list[int]]:
    filler = "the log says step {i} finished; value_{i} = {v} in src/mod_{i}.py "
    script = []
    for i in range(40):
        if i % 2 == 0:
            script.append({"toolCalls": [{"name": "list_dir", "arguments": {}}]})
        else:
            script.append({"text": (filler * 18).format(i=i, v=i * 7)})
    agent = harness.agent(script, context_window=12_000)
    backend = RecallableBackend(summarizer, ROOMY)
    engine = CompactionEngine(harness.session, backend, ROOMY)
    pre_step, overflow = compaction_hooks(engine)
    agent.pre_step_hooks.append(pre_step)
    agent.overflow_handler = overflow
    calls_before_pass: list[int] = []  # conversation requests sent before each pass
    for i in range(20):
        passes = len(engine_passes(harness))
        run(agent.run_turn(f"task {i}: " + (filler * 24).format(i=i, v=i)))
        for _ in range(len(engine_passes(harness)) - passes):
            calls_before_pass.append(len(harness.provider.requests))
    return engine, calls_before_pass


def engine_passes(harness: Harness) -> list[CompactionPlanEvent]:
    return [e for e in harness.session.events if isinstance(e, CompactionPlanEvent)]


def test_every_call_of_a_pass_extends_the_last_conversation_request_byte_for_byte(
    harness: Harness,
):
    summarizer = RouteSummarizer(("scripted", "scripted"))
    _loop(harness, summarizer)
    assert len(engine_passes(harness)) >= 2 and summarizer.requests
    conversation = harness.provider.requests
    assert all(t.layout == "riding" for t in summarizer.tasks)
    checked = 0
    for request in summarizer.requests:
        # the last conversation request sent before this call
        tools, messages = _wire(request)
        earlier = [
            r
            for r in conversation
            if _wire(r)[1][:-1] and messages.startswith(_wire(r)[1][:-1]) and _wire(r)[0] == tools
        ]
        assert earlier, "a summariser call that does not extend any conversation request"
        last = earlier[-1]
        assert request.system == last.system
        assert len(request.messages) > len(last.messages)
        assert request.messages[-1].text().startswith("[Compaction task")
        checked += 1
    assert checked == len(summarizer.requests)
    # and the calls of one pass share one prefix: the conversation as it stood at the pass
    by_prefix = {_wire(r)[1].rsplit('{"content"', 1)[0] for r in summarizer.requests}
    assert len(by_prefix) <= len(engine_passes(harness))
    assert_layout(harness.session)


def test_a_riding_stub_names_only_its_slice_and_the_extractive_stub_indexes_only_it(
    harness: Harness,
):
    summarizer = RouteSummarizer(("scripted", "scripted"))
    _loop(harness, summarizer)
    assert any(t.kind == "pass" for t in summarizer.tasks)
    for task, request in zip(summarizer.tasks, summarizer.requests, strict=True):
        assert task.layout == "riding"
        # a pass task names one range per part, in order, on its marker lines
        parts = task.parts if task.kind == "pass" else (task,)
        ranges = RANGE.findall(request.messages[-1].text())
        assert len(ranges) == len(parts), request.messages[-1].text()
        assert any(p.kind == "stub" for p in parts) or task.kind != "pass"
        for part, (first, last) in zip(parts, ranges, strict=True):
            named = task.conversation[int(first) - 1 : int(last)]
            if part.kind == "stub":  # exactly the slice's messages, by position
                assert tuple(named) == part.messages
            else:  # the state folds the whole span; checkpoints in it are background
                assert tuple(m for m in named if not _is_checkpoint(m)) == part.messages
    session = harness.session
    stubs = [
        e
        for e in session.events
        if isinstance(e, CompactionSummaryEvent) and e.data.model == "extractive"
    ]
    assert stubs
    for stub in stubs:  # every keyword of a stub is a literal of its own slice
        own = "\n".join(
            render_message(m)
            for s in stub.data.shadowed_seqs
            if (m := surface_message(session.events[s])) is not None
        )
        line = next((x for x in stub.data.summary.splitlines() if x.startswith("Keywords")), "")
        for anchor in parse_keyword_line(line):
            assert anchor.text in own, (anchor, stub.seq)


def _is_checkpoint(message) -> bool:
    return is_compact_checkpoint_source(message.source)


def test_a_different_summariser_model_keeps_the_compact_layout():
    session = long_session()
    summarizer = RouteSummarizer(("other", "small-model"))
    backend = RecallableBackend(summarizer, SETTINGS)
    run(CompactionEngine(session, backend, SETTINGS).compact_now(window=100_000))
    assert summarizer.requests
    for task, request in zip(summarizer.tasks, summarizer.requests, strict=True):
        assert task.layout == "compact"
        assert request.system == SUMMARISER_SYSTEM and request.tools == ()
        assert request.messages[-2] == as_transcript(task.messages[-1])


def test_a_compact_call_sends_the_span_as_transcript_text_with_no_tool_blocks():
    """A compact call offers no tools, so it carries no tool-call or tool-result blocks (the
    Messages API refuses them in a request without tools): each message goes as the transcript
    renders it."""
    session = long_session()
    summarizer = RouteSummarizer(("other", "small-model"))
    backend = RecallableBackend(summarizer, SETTINGS)
    run(CompactionEngine(session, backend, SETTINGS).compact_now(window=100_000))
    (request,) = summarizer.requests
    assert all(
        [type(b) for b in m.content] == [TextBlock] and m.role in ("user", "assistant")
        for m in request.messages
    )
    text = "\n".join(m.text() for m in request.messages)
    assert "[tool call: read_file(" in text and "Tool result: " in text
    wire = json.dumps(anthropic_wire(request.messages))
    assert '"tool_use"' not in wire and '"tool_result"' not in wire


def test_a_compact_call_opens_with_a_user_message_when_its_slice_does_not():
    """No shared context yet (a first pass) and a slice that starts with a model message: the
    call opens with a short user line (a provider may refuse a first message that is not the
    user's), and a one-call pass counts it when it names its slices."""
    start = assistant_message(tool_calls=[tool_call_block("c1")])
    rest = (tool_result_message("c1", "ok"), user_message("next"), assistant_message("done"))
    stub = SummaryTask(kind="stub", messages=(start, rest[0]), max_tokens=50)
    request = build_summary_request(stub, provider="other", model="m")
    assert request.messages[0].role == "user" and request.messages[0].text() == SLICE_LEAD
    state = SummaryTask(kind="state", messages=(start, *rest), max_tokens=80)
    task = compact_pass_task([stub, state])
    assert task is not None
    assert [p.slice_range for p in task.parts] == [(2, 3), (2, 5)]
    request = build_summary_request(task, provider="other", model="m")
    assert request.messages[0].text() == SLICE_LEAD
    assert request.messages[1:3] == (as_transcript(start), as_transcript(rest[0]))
    opening = SummaryTask(kind="stub", messages=rest[1:], max_tokens=50)
    assert build_summary_request(opening, provider="o", model="m").messages[0].text() == (
        "User: next"
    )


def test_a_compact_pass_is_one_call_that_sends_the_span_once():
    """With a different summariser model the pass is still one call: the context the stubs
    share, then the compacted span once (not once per stub and again for the state), each
    marker line naming its slice by position in that call."""
    session = long_session()
    summarizer = RouteSummarizer(("other", "small-model"))
    backend = RecallableBackend(summarizer, SETTINGS)
    result = run(CompactionEngine(session, backend, SETTINGS).compact_now(window=100_000))
    assert [t.kind for t in summarizer.tasks] == ["pass"]
    (task,), (request,) = summarizer.tasks, summarizer.requests
    assert task.layout == "compact" and [p.kind for p in task.parts][-1] == "state"
    assert len(task.parts) == len(result.checkpoints) >= 3
    state = task.parts[-1]
    lead = len(request.messages) - 1 - len(state.messages)  # the shared context, if any
    assert request.messages[lead:-1] == tuple(map(as_transcript, state.messages))  # once
    for part in task.parts:
        assert part.slice_range is not None
        first, last = part.slice_range
        assert request.messages[first - 1 : last] == tuple(map(as_transcript, part.messages))
        assert f"messages #{first}–#{last}" in request.messages[-1].text()
    # call by call, each stub's slice went out twice: in its own call and in the state's
    apart = [build_summary_request(p, provider="other", model="small-model") for p in task.parts]
    stub_messages = [m for p in task.parts[:-1] for m in p.messages]
    assert all(sum(as_transcript(m) in r.messages for r in apart) == 2 for m in stub_messages)
    assert all(request.messages.count(as_transcript(m)) == 1 for m in stub_messages)


class SlowSummarizer(RouteSummarizer):
    """Each call yields to the loop before answering, counting the calls in flight."""

    in_flight = 0
    most_in_flight = 0

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            return await super().summarize(task)
        finally:
            self.in_flight -= 1


class SlowCallByCall(SlowSummarizer):
    """Fails the one-call pass, so every region gets a call of its own."""

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        if task.kind == "pass":
            raise RuntimeError("the one call failed")
        return await super().summarize(task)


def test_the_calls_of_a_compact_layout_pass_run_concurrently():
    """Call by call (a different summariser model whose one-call pass failed), the pass still
    waits about one call: every region's call is in flight at once, up to
    ``max_concurrency``."""
    session = long_session(turns=12)
    summarizer = SlowCallByCall(("other", "small-model"))
    backend = RecallableBackend(summarizer, SETTINGS)
    run(CompactionEngine(session, backend, SETTINGS).compact_now(window=100_000))
    calls = len(summarizer.tasks)
    assert calls >= 3
    assert summarizer.most_in_flight == min(calls, SETTINGS.max_concurrency)


def with_header(session):
    """The conversation's route is the summariser's, so only the window decides the layout."""
    config = RequestConfig(provider="scripted", model="scripted")
    session.append(RequestHeader(header=RequestHeaderBody(config=config), reason="initial"))
    return session


def test_a_conversation_too_big_for_the_window_falls_back_to_the_compact_layout():
    """Even the request cut at the span's end leaves no room for an answer."""
    session = with_header(long_session())
    summarizer = RouteSummarizer(("scripted", "scripted"))
    backend = RecallableBackend(summarizer, SETTINGS)
    total = sum(session.node_tokens(s) for s in session.nodes)
    run(CompactionEngine(session, backend, SETTINGS).compact_now(window=total + 10))
    assert summarizer.tasks and all(t.layout == "compact" for t in summarizer.tasks)


def test_near_the_window_a_riding_call_carries_the_request_only_to_the_span_end():
    """The whole request would leave no room for the answer, the request up to the end of the
    compacted span does: the calls still ride (a byte prefix of the conversation, so the cache
    still serves them) instead of leaving the cache for compact calls of their own."""
    session = with_header(long_session(turns=30))
    settings = msgspec.structs.replace(SETTINGS, retain_tokens=1000)
    summarizer = RouteSummarizer(("scripted", "scripted"))
    backend = RecallableBackend(summarizer, settings)
    conversation = tuple(session.derive_messages())
    total = sum(session.node_tokens(s) for s in session.nodes)
    run(CompactionEngine(session, backend, settings).compact_now(window=total + 10))
    assert summarizer.tasks and all(t.layout == "riding" for t in summarizer.tasks)
    for task, request in zip(summarizer.tasks, summarizer.requests, strict=True):
        carried = request.messages[:-1]  # the instruction is last
        assert 0 < len(carried) < len(conversation)
        assert carried == conversation[: len(carried)]
        ranges = [part.slice_range for part in task.parts] if task.kind == "pass" else []
        ranges = ranges or [task.slice_range]
        assert all(r is not None and r[1] <= len(carried) for r in ranges)
        assert task.output_limit is not None and task.output_limit >= task.max_tokens
    assert_layout(session)
