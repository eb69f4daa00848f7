"""What real servers get wrong in their streams, against a stand-in server on 127.0.0.1: tool
calls told apart by id (Gemini, Ollama), arguments sent as an object, calls without an id, a
``<think>`` block in the content, ``delta.reasoning``, a server that ignores ``max_tokens``,
and usage figures that cannot be right (docs/local-models.md, "What dsh puts right in a
server's stream")."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from dsh.events import ReasoningBlock, TextBlock, Usage
from dsh.llm.anthropic import AnthropicProvider
from dsh.llm.assemble import StreamAssembler
from dsh.llm.openai_compat import OpenAICompatProvider, to_wire_messages
from dsh.llm.stream_repair import ThinkSplitter
from dsh.llm.text_tool_calls import recover_reply
from dsh.llm.types import Finish, ReasoningDelta, StreamEvent, TextDelta, UsageReport
from tests.llm.fake_server import (
    FakeServer,
    an_block_start,
    an_block_stop,
    an_delta,
    an_message_end,
    an_message_start,
    anthropic_stream,
    oa_chunk,
    oa_tool_call,
    oa_usage,
    openai_stream,
)
from tests.llm.provider_helpers import collect, make_request, tool_calls


def _openai(server: FakeServer, name: str = "openai-compatible") -> OpenAICompatProvider:
    return OpenAICompatProvider(name, "fake-model", server.url, "k")


def _anthropic(server: FakeServer) -> AnthropicProvider:
    return AnthropicProvider("anthropic", "fake-model", server.url, "k")


def _stream(server: FakeServer, *payloads: Any, **request: Any) -> list[StreamEvent]:
    server.queue(openai_stream(*payloads))
    return collect(_openai(server).stream(make_request(**request), history=()))


def _reply(events: list[StreamEvent]):
    return StreamAssembler().feed_all(events).message("a-1-1", "p", "m")


def _call(name: str, arguments: Any, *, index: int | None = None, id: str | None = None):
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if index is not None:
        call["index"] = index
    if id is not None:
        call["id"] = id
    return call


def test_whole_calls_without_an_index_are_told_apart_by_their_ids(server: FakeServer):
    # Gemini's OpenAI endpoint: each call whole in its own chunk, no index.
    events = _stream(
        server,
        oa_chunk(tool_calls=[_call("read_file", '{"path": "f.txt"}', id="g1")]),
        oa_chunk(tool_calls=[_call("list_dir", '{"path": "."}', id="g2")]),
        oa_chunk(finish="stop"),
    )

    assert tool_calls(events) == {
        0: ("g1", "read_file", '{"path": "f.txt"}'),
        1: ("g2", "list_dir", '{"path": "."}'),
    }
    assert events[-1] == Finish("tool-calls")


def test_whole_calls_without_an_index_or_an_id_are_told_apart_by_their_names(server: FakeServer):
    events = _stream(
        server,
        oa_chunk(tool_calls=[_call("read_file", '{"path": "a"}')]),
        oa_chunk(tool_calls=[_call("read_file", '{"path": "b"}')]),
        oa_chunk(finish="tool_calls"),
    )

    calls = _reply(events).tool_calls()
    assert [(c.name, c.arguments) for c in calls] == [
        ("read_file", '{"path": "a"}'),
        ("read_file", '{"path": "b"}'),
    ]
    assert len({c.id for c in calls}) == 2


def test_calls_sharing_index_0_with_their_own_ids_are_two_calls(server: FakeServer):
    # Ollama: every call labelled index 0, each with its own id.
    events = _stream(
        server,
        oa_chunk(tool_calls=[oa_tool_call(0, id="call_a", name="read_file", arguments="{")]),
        oa_chunk(tool_calls=[oa_tool_call(0, arguments='"path": "f.txt"}')]),
        oa_chunk(
            tool_calls=[
                oa_tool_call(
                    0, id="call_b", name="write_file", arguments='{"path": "w", "content": "hi"}'
                )
            ]
        ),
        oa_chunk(finish="tool_calls"),
    )

    assert tool_calls(events) == {
        0: ("call_a", "read_file", '{"path": "f.txt"}'),
        1: ("call_b", "write_file", '{"path": "w", "content": "hi"}'),
    }


def test_another_id_while_a_calls_arguments_are_still_open_does_not_split_it(
    server: FakeServer,
):
    events = _stream(
        server,
        oa_chunk(tool_calls=[oa_tool_call(0, id="c1", name="read_file", arguments='{"pa')]),
        oa_chunk(tool_calls=[oa_tool_call(0, id="c2", arguments='th": "a"}')]),
        oa_chunk(finish="tool_calls"),
    )

    assert tool_calls(events) == {0: ("c1", "read_file", '{"path": "a"}')}


def test_arguments_sent_as_an_object_are_its_json_text(server: FakeServer):
    events = _stream(
        server,
        oa_chunk(tool_calls=[_call("read_file", {"path": "f.txt", "n": 2}, index=0, id="o1")]),
        oa_chunk(finish="tool_calls"),
    )

    (call,) = _reply(events).tool_calls()
    assert call.id == "o1" and json.loads(call.arguments) == {"path": "f.txt", "n": 2}


def test_a_call_without_an_id_gets_one_made_and_the_reply_is_kept(
    server: FakeServer, caplog: pytest.LogCaptureFixture
):
    events = _stream(
        server,
        oa_chunk(content="Looking."),
        oa_chunk(tool_calls=[oa_tool_call(0, name="read_file", arguments='{"path": "a"}')]),
        oa_chunk(tool_calls=[_call("read_file", '{"path": "b"}', index=1, id="")]),
        oa_chunk(finish="tool_calls"),
    )

    with caplog.at_level(logging.WARNING, logger="dsh.llm"):
        reply = _reply(events)
    assert reply.text() == "Looking."
    assert [(c.id, c.arguments) for c in reply.tool_calls()] == [
        ("a-1-1-call-0", '{"path": "a"}'),
        ("a-1-1-call-1", '{"path": "b"}'),
    ]
    assert "came without an id" in caplog.text
    partial = StreamAssembler().feed_all(events).partial_message("a-1-1", "p", "m")
    assert [c.id for c in partial.tool_calls()] == ["a-1-1-call-0", "a-1-1-call-1"]


def _pieces(text: str, size: int) -> list[dict[str, Any]]:
    return [oa_chunk(content=text[i : i + size]) for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_a_think_block_opening_the_content_is_reasoning_however_it_is_split(
    server: FakeServer, size: int
):
    text = '\n<think>\nI should read it.\n</think>\n\n<tool_call>{"name": "read_file", '
    text += '"arguments": {"path": "a"}}</tool_call>'
    events = _stream(server, *_pieces(text, size), oa_chunk(finish="stop"))

    reply = _reply(events)
    assert [type(b) for b in reply.content] == [ReasoningBlock, TextBlock]
    assert reply.content[0].text == "I should read it.\n"
    assert reply.text().startswith("<tool_call>")
    recovered = recover_reply(reply, lambda name, args: name == "read_file", "text-1-1")
    assert recovered is not None
    (call,) = recovered.message.tool_calls()
    assert (call.name, call.arguments) == ("read_file", '{"path": "a"}')
    wire = to_wire_messages(make_request(reply), reasoning_back=False)[-1]
    assert "think" not in json.dumps(wire) and "I should" not in json.dumps(wire)


@pytest.mark.parametrize(
    "text", ["<thing> is a tag", "  <th", "Hello <think>x</think>", "<think>never closed"]
)
def test_only_a_whole_leading_think_tag_opens_reasoning(server: FakeServer, text: str):
    events = _stream(server, *_pieces(text, 2), oa_chunk(finish="stop"))

    reply = _reply(events)
    if text.startswith("<think>"):
        assert reply.text() == "" and reply.content[0].text == "never closed"
    else:
        assert reply.text() == text and not any(
            isinstance(b, ReasoningBlock) for b in reply.content
        )


def test_the_splitter_holds_a_closing_tag_split_across_pieces():
    splitter = ThinkSplitter()
    out = [e for piece in ("<think>ab</th", "ink>", "  ", "c") for e in splitter.feed(piece)]
    assert out + splitter.end() == [ReasoningDelta("ab"), TextDelta("c")]


def test_reasoning_in_the_reasoning_field_is_reasoning_and_is_not_taken_twice(
    server: FakeServer,
):
    first = oa_chunk(reasoning="RC ")
    second = oa_chunk()
    second["choices"][0]["delta"]["reasoning"] = "R-FIELD"
    both = oa_chunk(reasoning=" same")
    both["choices"][0]["delta"]["reasoning"] = " same"
    events = _stream(
        server, first, second, both, oa_chunk(content="answer"), oa_chunk(finish="stop")
    )

    assert _reply(events).content[0] == ReasoningBlock(text="RC R-FIELD same")


def test_a_server_that_ignores_max_tokens_is_stopped_as_cut_at_the_limit(
    server: FakeServer, caplog: pytest.LogCaptureFixture
):
    # 2,000 pieces of 4 characters (a token each, by either count), no finish and no end:
    # read to its end it would be an unfinished stream.
    server.queue(openai_stream(*(oa_chunk(content="abc ") for _ in range(2000)), done=False))

    with caplog.at_level(logging.WARNING, logger="dsh.llm"):
        events = collect(
            _openai(server).stream(make_request(params={"max_tokens": 100}), history=())
        )

    assert events[-1] == Finish("max-tokens")
    assert sum(isinstance(e, TextDelta) for e in events) == 100 + 50 + 256 + 1
    assert "went on past max_tokens=100" in caplog.text


def test_a_reply_within_half_as_much_again_as_the_bound_is_not_cut(server: FakeServer):
    events = _stream(
        server,
        *(oa_chunk(content="abc ") for _ in range(400)),
        oa_chunk(finish="stop"),
        params={"max_tokens": 100},
    )

    assert events[-1] == Finish("stop")


def test_usage_figures_are_never_negative_and_cache_reads_never_exceed_the_prompt(
    server: FakeServer,
):
    negative = oa_usage(-500, -20)
    weird = oa_usage(100, 5, cached_tokens=5000, reasoning=80)
    garbage = {"prompt_tokens": "lots", "completion_tokens": None, "total_tokens": 0}
    reports = []
    for usage in (negative, weird, garbage):
        events = _stream(
            server,
            oa_chunk(content="x"),
            oa_chunk(finish="stop"),
            oa_chunk(no_choices=True, usage=usage),
        )
        reports += [e.usage for e in events if isinstance(e, UsageReport)]

    assert reports == [
        Usage(input_tokens=0, output_tokens=0),
        Usage(input_tokens=0, output_tokens=5, cache_read_tokens=100, reasoning_tokens=5),
        Usage(input_tokens=0, output_tokens=0),
    ]


def test_anthropic_input_and_text_given_whole_at_block_start_are_used(server: FakeServer):
    whole = {"path": "anth.txt", "content": "hi"}
    server.queue(
        anthropic_stream(
            an_message_start(),
            an_block_start(0, {"type": "text", "text": "TEXT-IN-START "}),
            an_delta(0, {"type": "text_delta", "text": "and delta"}),
            an_block_stop(0),
            an_block_start(
                1, {"type": "tool_use", "id": "t1", "name": "write_file", "input": whole}
            ),
            an_block_stop(1),
            *an_message_end("tool_use"),
        )
    )

    events = collect(_anthropic(server).stream(make_request(), history=()))

    reply = _reply(events)
    assert reply.text() == "TEXT-IN-START and delta"
    (call,) = reply.tool_calls()
    assert (call.id, call.name, json.loads(call.arguments)) == ("t1", "write_file", whole)


def test_anthropic_negative_usage_counts_as_nothing(server: FakeServer):
    server.queue(
        anthropic_stream(
            an_message_start(input_tokens=-7),
            an_block_start(0, {"type": "text", "text": ""}),
            an_delta(0, {"type": "text_delta", "text": "ok"}),
            an_block_stop(0),
            *an_message_end(output_tokens=-20),
        )
    )

    events = collect(_anthropic(server).stream(make_request(), history=()))

    (report,) = [e for e in events if isinstance(e, UsageReport)]
    assert report.usage == Usage(input_tokens=0, output_tokens=0)


def test_anthropic_server_that_ignores_max_tokens_is_stopped(server: FakeServer):
    server.queue(
        anthropic_stream(
            an_message_start(),
            an_block_start(0, {"type": "text", "text": ""}),
            *(an_delta(0, {"type": "text_delta", "text": "abc "}) for _ in range(2000)),
        )
    )

    events = collect(
        _anthropic(server).stream(make_request(params={"max_tokens": 100}), history=())
    )

    assert events[-1] == Finish("max-tokens")
    assert sum(isinstance(e, TextDelta) for e in events) == 100 + 50 + 256 + 1
