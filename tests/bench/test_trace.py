"""The bench bills exactly what the summariser sends: the request recorded offline for a task is
byte-identical to the one ``ModelSummarizer`` streams to its provider for the same task."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from dsh.bench.trace import SimulatedSummarizer, Trace
from dsh.compaction import ExtractiveSummarizer, ModelSummarizer
from dsh.compaction.summarizer import SummaryTask
from dsh.events import Event, encode_json
from dsh.llm.types import Finish, ModelRequest, StreamEvent, TextDelta
from tests.helpers import assistant_message, tool_call_block, tool_result_message, user_message


class Capturing:
    """A provider that records each request and answers with a short summary."""

    name = "cap"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        return self._answer()

    async def _answer(self) -> AsyncIterator[StreamEvent]:
        yield TextDelta("## Goal\n- keep going\nKeywords — id: ZEBRA-7731")
        yield Finish("stop")


SLICE = (
    user_message("the ticket is ZEBRA-7731", id="u1"),
    assistant_message("reading", id="a1", tool_calls=[tool_call_block("c1")]),
    tool_result_message("c1", "port = 8123\n" * 40, id="t1"),
    assistant_message("noted", id="a2"),
)
TOOLS = ({"name": "read_file", "description": "read", "parameters": {"type": "object"}},)
CONVERSATION = (user_message("fix the importer", id="u0"), *SLICE)


def _riding(kind, messages, max_tokens, slice_range, **extra) -> SummaryTask:
    return SummaryTask(
        kind,
        messages,
        max_tokens,
        system="be brief",
        tools=TOOLS,
        layout="riding",
        conversation=CONVERSATION,
        slice_range=slice_range,
        **extra,
    )


PASS = _riding(
    "pass",
    (),
    520,
    None,
    output_limit=900,
    parts=(
        _riding("stub", SLICE[:3], 120, (2, 4)),
        _riding("state", SLICE, 400, (2, 5), previous="- goal"),
    ),
)


@pytest.mark.parametrize(
    "task",
    [
        SummaryTask("summary", SLICE, 300, system="be brief", tools=TOOLS, previous="old"),
        SummaryTask(
            "stub",
            SLICE,
            120,
            system="be brief",
            tools=TOOLS,
            background="- state: porting",
            keyword_lines=("Keywords — id: OLD-1",),
            recent_stubs=("<compacted-index-stub>\nearlier\n</compacted-index-stub>",),
        ),
        SummaryTask("state", SLICE, 400, system="be brief", tools=TOOLS, previous="- goal"),
        PASS,
    ],
    ids=["summary", "stub", "state", "pass"],
)
def test_the_billed_request_is_the_one_model_summarizer_sends(task: SummaryTask) -> None:
    provider = Capturing()
    asyncio.run(ModelSummarizer(provider, "cap-1").summarize(task))
    (sent,) = provider.requests
    trace = Trace()
    simulated = SimulatedSummarizer(
        ExtractiveSummarizer(), trace, latency=0, provider="cap", model="cap-1"
    )
    asyncio.run(simulated.summarize(task))
    (billed,) = simulated.requests
    assert encode_json(billed) == encode_json(sent)  # byte for byte
    record = trace.calls[0]
    segments, _ = Trace().segments(sent)
    assert record.purpose == "compaction"
    assert record.input_tokens == sum(tokens for _, tokens in segments)
    assert len(record.messages.segments) == len(segments)
