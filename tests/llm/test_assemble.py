"""StreamAssembler: stream events fold back into the assistant message the loop logs."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.errors import ProviderError
from dsh.events import ModelSource, ReasoningBlock, TextBlock, ToolCallBlock, Usage
from dsh.llm.assemble import StreamAssembler
from dsh.llm.types import (
    Finish,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageReport,
)


def test_blocks_come_out_reasoning_then_text_then_tool_calls_by_index() -> None:
    events: list[StreamEvent] = [
        ToolCallDelta(1, id="c1", name="grep", arguments='{"q":'),
        TextDelta("Hel"),
        ReasoningDelta("think"),
        ToolCallDelta(0, id="c0", name="read_file", arguments="{}"),
        TextDelta("lo"),
        ToolCallDelta(1, arguments='"x"}'),
        ReasoningDelta("ing"),
        UsageReport(Usage(input_tokens=10, output_tokens=3)),
        Finish("tool-calls"),
    ]
    assembler = StreamAssembler().feed_all(events)
    message = assembler.message("a-1", "deepseek", "deepseek-chat")

    assert message.role == "assistant"
    assert message.id == "a-1"
    assert message.source == ModelSource(provider="deepseek", model="deepseek-chat")
    assert message.content == (
        ReasoningBlock(text="thinking"),
        TextBlock(text="Hello"),
        ToolCallBlock(id="c0", name="read_file", arguments="{}"),
        ToolCallBlock(id="c1", name="grep", arguments='{"q":"x"}'),
    )
    assert assembler.usage == Usage(input_tokens=10, output_tokens=3)
    assert assembler.finish == "tool-calls"


def test_tool_call_id_and_name_come_from_the_first_delta_that_carries_them() -> None:
    events: list[StreamEvent] = [
        ToolCallDelta(0, arguments='{"a"'),
        ToolCallDelta(0, id="first", arguments=":"),
        ToolCallDelta(0, id="second", name="tool", arguments="1}"),
        ToolCallDelta(0, name="other"),
    ]
    message = StreamAssembler().feed_all(events).message("a", "p", "m")
    assert message.content == (ToolCallBlock(id="first", name="tool", arguments='{"a":1}'),)


def test_empty_stream_gives_an_empty_message_without_usage_or_finish() -> None:
    assembler = StreamAssembler()
    assert assembler.message("a", "p", "m").content == ()
    assert assembler.usage is None
    assert assembler.finish is None


def test_malformed_arguments_are_kept_verbatim_in_a_complete_message() -> None:
    events: list[StreamEvent] = [ToolCallDelta(0, id="c", name="t", arguments="{not json")]
    message = StreamAssembler().feed_all(events).message("a", "p", "m")
    assert message.tool_calls() == (ToolCallBlock(id="c", name="t", arguments="{not json"),)


def test_a_tool_call_without_a_name_is_an_invalid_response() -> None:
    assembler = StreamAssembler().feed_all([ToolCallDelta(0, id="c", arguments="{}")])
    with pytest.raises(ProviderError) as caught:
        assembler.message("a", "p", "m")
    assert caught.value.code == "INVALID_RESPONSE"


def test_a_tool_call_without_an_id_gets_one_made_unique_among_the_replys_ids() -> None:
    events = [
        ToolCallDelta(0, id="a-call-1", name="t", arguments="{}"),
        ToolCallDelta(1, name="t", arguments="{}"),
        ToolCallDelta(2, id="", name="t", arguments="{}"),
    ]
    message = StreamAssembler().feed_all(events).message("a", "p", "m")
    assert [c.id for c in message.tool_calls()] == ["a-call-1", "a-call-1_2", "a-call-2"]


def test_partial_message_keeps_arrived_text_and_only_complete_tool_calls() -> None:
    events: list[StreamEvent] = [
        ReasoningDelta("plan"),
        TextDelta("Reading both"),
        ToolCallDelta(0, id="c0", name="read_file", arguments='{"path":"a"}'),
        ToolCallDelta(1, id="c1", name="read_file", arguments='{"path":'),
        ToolCallDelta(2, name="no_id", arguments="{}"),
        ToolCallDelta(3, id="c3", arguments="{}"),
    ]
    message = StreamAssembler().feed_all(events).partial_message("a", "p", "m")
    assert message.content == (
        ReasoningBlock(text="plan"),
        TextBlock(text="Reading both"),
        ToolCallBlock(id="c0", name="read_file", arguments='{"path":"a"}'),
        ToolCallBlock(id="a-call-2", name="no_id", arguments="{}"),
    )


def test_repeated_tool_call_ids_of_one_reply_are_made_unique_in_whole_and_partial_messages(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # "a_2" is taken by a later call of the same reply, so the second "a" becomes "a_3".
    ids = ["a", "a", "a_2", "b", "a"]
    events: list[StreamEvent] = [
        ToolCallDelta(i, id=call_id, name="ls", arguments="{}") for i, call_id in enumerate(ids)
    ]
    assembler = StreamAssembler().feed_all(events)
    expected = ["a", "a_3", "a_2", "b", "a_4"]
    assert [c.id for c in assembler.message("m", "p", "m").tool_calls()] == expected
    assert [c.id for c in assembler.partial_message("m", "p", "m").tool_calls()] == expected
    assert "repeats the id 'a'" in caplog.text and "'a_4'" in caplog.text


# ---- property: any split reassembles to the same message ------------------------------------


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


_cuts = st.lists(st.integers(min_value=0, max_value=10_000), max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(min_size=1),
    reasoning=st.text(min_size=1),
    arguments=st.lists(st.text(), min_size=1, max_size=3),
    text_cuts=_cuts,
    reasoning_cuts=_cuts,
    argument_cuts=st.lists(_cuts, min_size=3, max_size=3),
    order=st.randoms(use_true_random=False),
)
def test_any_split_of_text_and_arguments_into_deltas_reassembles_the_same_message(
    text: str,
    reasoning: str,
    arguments: list[str],
    text_cuts: list[int],
    reasoning_cuts: list[int],
    argument_cuts: list[list[int]],
    order: random.Random,
) -> None:
    whole: list[StreamEvent] = [ReasoningDelta(reasoning), TextDelta(text)]
    whole += [ToolCallDelta(i, id=f"c{i}", name="t", arguments=a) for i, a in enumerate(arguments)]
    expected = StreamAssembler().feed_all(whole).message("a", "p", "m")

    # One queue of deltas per stream; streams interleave freely, each keeps its own order.
    queues: list[list[StreamEvent]] = [
        [ReasoningDelta(p) for p in _split(reasoning, reasoning_cuts)],
        [TextDelta(p) for p in _split(text, text_cuts)],
    ]
    for i, (args, cuts) in enumerate(zip(arguments, argument_cuts, strict=False)):
        first, *rest = _split(args, cuts)
        queue: list[StreamEvent] = [ToolCallDelta(i, id=f"c{i}", name="t", arguments=first)]
        queue += [ToolCallDelta(i, arguments=p) for p in rest]
        queues.append(queue)
    assembler = StreamAssembler()
    while any(queues):
        assembler.feed(order.choice([q for q in queues if q]).pop(0))

    assert assembler.message("a", "p", "m") == expected
    assert assembler.text == text
    assert assembler.reasoning == reasoning
