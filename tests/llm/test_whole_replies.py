"""Replies real servers send in shapes other than the plain stream, against a real HTTP server on
127.0.0.1: a whole ``chat.completion`` (a server or proxy that ignored ``stream: true``) is taken
as the reply it is, and only choice 0 of a stream or a whole reply is the reply."""

from __future__ import annotations

from typing import Any

from dsh.events import AssistantMessageEvent, ToolResultEvent, Usage
from dsh.llm.errors import ErrorCode
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.llm.types import Finish, ReasoningDelta, TextDelta, ToolCallDelta, UsageReport
from tests.agent.conftest import Harness, harness, run  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_stream
from tests.llm.provider_helpers import collect, collect_until_error, make_request


def provider(server: FakeServer) -> OpenAICompatProvider:
    return OpenAICompatProvider("openai-compatible", "fake-model", server.url, "k")


def completion(*choices: dict[str, Any], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """A whole ``chat.completion`` body, as a server answers without ``stream``."""
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "fake-model",
        "choices": list(choices),
    }
    if usage is not None:
        body["usage"] = usage
    return body


def choice(index: int = 0, finish: str | None = "stop", **message: Any) -> dict[str, Any]:
    return {
        "index": index,
        "message": {"role": "assistant", "content": None, **message},
        "finish_reason": finish,
    }


USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 12,
    "total_tokens": 112,
    "prompt_tokens_details": {"cached_tokens": 60},
}


def test_a_whole_completion_is_the_reply_with_its_text_reasoning_and_usage_other_json_is_not(
    server: FakeServer,
):
    server.queue(
        json_ok(
            completion(
                choice(content="The answer is 4.", reasoning_content="2 and 2 make 4."),
                usage=USAGE,
            )
        )
    )
    events = collect(provider(server).stream(make_request(), history=()))
    assert events == [
        ReasoningDelta("2 and 2 make 4."),
        TextDelta("The answer is 4."),
        UsageReport(Usage(input_tokens=40, output_tokens=12, cache_read_tokens=60)),
        Finish("stop"),
    ]
    assert server.requests[0].body["stream"] is True  # it was asked to stream
    # JSON that is no completion is still what it was: no event stream, check the base URL
    server.queue(json_ok({"object": "list", "data": []}))
    events, error = collect_until_error(provider(server).stream(make_request(), history=()))
    assert events == [] and error.code == ErrorCode.INVALID_RESPONSE
    assert error.detail.startswith(
        "the server did not send an event stream (Content-Type application/json, not "
        "text/event-stream): check that the base URL"
    )


def test_a_whole_completion_s_tool_calls_and_leading_think_block_are_read_as_streamed(
    server: FakeServer,
):
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"a":1}'}},
        {"id": "c2", "type": "function", "function": {"name": "read", "arguments": {"p": "x"}}},
    ]
    content = "<think>look first</think>\n\nLooking."
    server.queue(
        json_ok(completion(choice(finish="tool_calls", content=content, tool_calls=calls)))
    )
    events = collect(provider(server).stream(make_request(), history=()))
    assert events == [
        ReasoningDelta("look first"),
        TextDelta("Looking."),
        ToolCallDelta(index=0, id="c1", name="bash", arguments='{"a":1}'),
        ToolCallDelta(index=1, id="c2", name="read", arguments='{"p": "x"}'),
        Finish("tool-calls"),
    ]


def test_only_choice_zero_of_a_whole_completion_is_the_reply(server: FakeServer):
    server.queue(
        json_ok(
            completion(
                choice(0, content="first"),
                choice(1, finish="length", content="second"),
            )
        )
    )
    events = collect(provider(server).stream(make_request(), history=()))
    assert events == [TextDelta("first"), Finish("stop")]


def test_a_streamed_choice_other_than_zero_adds_nothing_to_the_reply(server: FakeServer):
    def chunk(index: int, finish: str | None = None, **delta: Any) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "fake-model",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
        }

    server.queue(
        openai_stream(
            chunk(0, content="Hello"),
            chunk(1, content=" from elsewhere"),
            chunk(1, tool_calls=[{"index": 0, "id": "x", "function": {"name": "bash"}}]),
            chunk(0, content=" there"),
            chunk(1, finish="length"),
            chunk(0, finish="stop"),
        )
    )
    events = collect(provider(server).stream(make_request(), history=()))
    assert events == [TextDelta("Hello"), TextDelta(" there"), Finish("stop")]


def test_a_turn_on_a_server_that_ignores_stream_runs_its_call_and_completes(
    harness: Harness,  # noqa: F811
    server: FakeServer,
):
    (harness.workspace / "a.txt").write_text("hello\n")
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
    }
    server.queue(
        json_ok(completion(choice(finish="tool_calls", tool_calls=[call]), usage=USAGE)),
        json_ok(completion(choice(content="It says hello."), usage=USAGE)),
    )
    agent = harness.agent([])
    agent.provider = OpenAICompatProvider("openai-compatible", "m", server.url + "/v1", "k")
    result = run(agent.run_turn("what is in a.txt?"))
    assert (result.reason, result.text) == ("completed", "It says hello.")
    (answer,) = [e for e in harness.session.events if isinstance(e, ToolResultEvent)]
    assert answer.data.error is None and "hello" in str(answer.data.message)
    replies = [e for e in harness.session.events if isinstance(e, AssistantMessageEvent)]
    assert [r.data.usage.output_tokens for r in replies if r.data.usage] == [12, 12]
