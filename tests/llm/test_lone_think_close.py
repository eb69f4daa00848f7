"""A reply whose chat template put ``<think>`` in the prompt (Qwen3 thinking, DeepSeek-R1
distills on llama.cpp without a reasoning parser) writes only ``</think>``: the text before it
is reasoning, by the rule ``dsh.llm.stream_repair.ThinkSplitter`` states, and a mention of the
tag in an answer is left alone (a real HTTP server on 127.0.0.1 stands in for the server)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dsh.compaction import ModelSummarizer
from dsh.compaction.summarizer import SummaryTask
from dsh.events import ReasoningBlock
from dsh.llm.assemble import StreamAssembler
from dsh.llm.openai_compat import OpenAICompatProvider, to_wire_messages
from dsh.llm.types import StreamEvent, TextDelta, TextWasReasoning
from tests.agent.conftest import run
from tests.helpers import assistant_message, user_message
from tests.llm.fake_server import FakeServer, json_ok, oa_chunk, oa_tool_call, openai_stream
from tests.llm.provider_helpers import collect, make_request

REPLY = "Okay, the user wants the sum.\n2 and 2 make 4.\n</think>\n\nThe answer is 4."


def _stream(server: FakeServer, *payloads: Any) -> list[StreamEvent]:
    server.queue(openai_stream(*payloads))
    provider = OpenAICompatProvider("openai-compatible", "fake-model", server.url, "k")
    return collect(provider.stream(make_request(), history=()))


def _pieces(text: str, size: int) -> list[dict[str, Any]]:
    return [oa_chunk(content=text[i : i + size]) for i in range(0, len(text), size)]


def _reply(events: list[StreamEvent]):
    return StreamAssembler().feed_all(events).message("a-1-1", "p", "m")


def _reasoning(reply: Any) -> str:
    return "".join(b.text for b in reply.content if isinstance(b, ReasoningBlock))


@pytest.mark.parametrize("size", [1, 2, 5, 1000])
def test_the_text_before_a_lone_closing_tag_is_reasoning_however_it_is_split(
    server: FakeServer, size: int
):
    events = _stream(server, *_pieces(REPLY, size), oa_chunk(finish="stop"))
    assert events.count(TextWasReasoning()) == 1
    reply = _reply(events)
    assert _reasoning(reply) == "Okay, the user wants the sum.\n2 and 2 make 4.\n"
    assert reply.text() == "The answer is 4."
    wire = json.dumps(to_wire_messages(make_request(reply), reasoning_back=False)[-1])
    assert "think" not in wire and "user wants" not in wire


def test_a_lone_closing_tag_before_a_tool_call_or_at_the_end_closes_reasoning(
    server: FakeServer,
):
    call = oa_tool_call(0, id="c1", name="bash", arguments='{"command": "ls"}')
    events = _stream(
        server,
        oa_chunk(content="I will list the files.\n</thi"),
        oa_chunk(content="nk>  "),
        oa_chunk(tool_calls=[call]),
        oa_chunk(finish="tool_calls"),
    )
    reply = _reply(events)
    assert _reasoning(reply) == "I will list the files.\n"
    assert reply.text() == "" and [c.name for c in reply.tool_calls()] == ["bash"]
    only = _reply(
        _stream(server, oa_chunk(content="just thinking\n</think>"), oa_chunk(finish="stop"))
    )
    assert (_reasoning(only), only.text()) == ("just thinking\n", "")


def test_a_whole_reply_with_a_lone_closing_tag_is_split_alike(server: FakeServer):
    message = {"role": "assistant", "content": REPLY}
    body = {"object": "chat.completion", "choices": [{"index": 0, "message": message}]}
    server.queue(json_ok(body))
    provider = OpenAICompatProvider("openai-compatible", "fake-model", server.url, "k")
    reply = _reply(collect(provider.stream(make_request(), history=())))
    assert reply.text() == "The answer is 4." and _reasoning(reply).endswith("make 4.\n")


@pytest.mark.parametrize(
    "text",
    [
        "Close it with `</think>`\nand go on.",  # inline code
        "The </think> tag ends the block.\nThat is all.",  # words after it on its line
        "Like this:\n```\n</think>\n```\nThat is the tag.",  # inside a fence
        "The template writes <think> and the model\n</think>\nends it.",  # opened before
    ],
)
def test_an_answer_that_mentions_the_tag_keeps_all_its_text(server: FakeServer, text: str):
    for size in (1, 1000):
        events = _stream(server, *_pieces(text, size), oa_chunk(finish="stop"))
        reply = _reply(events)
        assert TextWasReasoning() not in events
        assert reply.text() == text and _reasoning(reply) == ""


def test_a_closing_tag_after_a_tool_call_or_the_server_s_own_reasoning_is_text(
    server: FakeServer,
):
    call = oa_tool_call(0, id="c1", name="bash", arguments='{"command": "ls"}')
    text = "listed\n</think>\nmore"
    after_call = _reply(
        _stream(server, oa_chunk(tool_calls=[call]), *_pieces(text, 3), oa_chunk(finish="stop"))
    )
    assert after_call.text() == text and _reasoning(after_call) == ""
    after_reasoning = _reply(
        _stream(server, oa_chunk(reasoning="mine"), *_pieces(text, 3), oa_chunk(finish="stop"))
    )
    assert after_reasoning.text() == text and _reasoning(after_reasoning) == "mine"


def test_a_summariser_s_monologue_before_a_lone_closing_tag_is_not_its_summary(
    server: FakeServer,
):
    """The summariser streams through the same adapter: its answer is what follows the tag
    (``without_thinking`` only knows blocks with both tags)."""
    answer = "Okay, the user wants me to summarise.\n</think>\n\nThe user fixed the bug."
    server.queue(openai_stream(*_pieces(answer, 4), oa_chunk(finish="stop")))
    provider = OpenAICompatProvider("openai-compatible", "fake-model", server.url, "k")
    task = SummaryTask(
        kind="summary",
        messages=(user_message("fix it"), assistant_message("fixed")),
        max_tokens=100,
    )
    output = run(ModelSummarizer(provider, "fake-model").summarize(task))
    assert output.text == "The user fixed the bug." and "Okay" not in (output.raw_output or "")


def _provisional(events: list[StreamEvent]) -> list[tuple[str, bool]]:
    return [(e.text, e.provisional) for e in events if isinstance(e, TextDelta)]


def test_text_is_provisional_until_the_splitter_knows_it_is_not_reasoning(server: FakeServer):
    """Text a lone ``</think>`` may yet make reasoning is marked ``provisional`` (a face that
    cannot take text back holds it: ``dsh.cli.held_text``); the text after the tag, after a
    tool call or a ``<think>`` mention, and a leading block's answer are not."""
    events = _stream(
        server,
        oa_chunk(content="Okay, the sum.\n"),
        oa_chunk(content="</think>\n\n"),
        oa_chunk(content="It is 4."),
        oa_chunk(finish="stop"),
    )
    assert _provisional(events) == [("Okay, the sum.\n", True), ("It is 4.", False)]
    mention = _stream(
        server,
        oa_chunk(content="Tags: <think> opens"),
        oa_chunk(content=" and </think> closes.\n"),
        oa_chunk(finish="stop"),
    )
    assert [p for _, p in _provisional(mention)] == [False, False]
    call = oa_tool_call(0, id="c1", name="bash", arguments='{"command": "ls"}')
    after_call = _stream(
        server, oa_chunk(tool_calls=[call]), oa_chunk(content="done"), oa_chunk(finish="stop")
    )
    assert _provisional(after_call) == [("done", False)]
    block = _stream(server, oa_chunk(content="<think>hm</think>It is 4."), oa_chunk(finish="stop"))
    assert _provisional(block) == [("It is 4.", False)]
    plain = _stream(server, oa_chunk(content="Hello"), oa_chunk(finish="stop"))
    assert _provisional(plain) == [("Hello", True)]  # no tag ever came: undecided to its end
