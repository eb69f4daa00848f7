"""The Anthropic adapter against a real local HTTP server speaking Messages SSE."""

from __future__ import annotations

import socket
from typing import Any

import anthropic
import pytest

from dsh.events import ReasoningBlock, Usage
from dsh.events.codec import encode_json
from dsh.llm.anthropic import DEFAULT_MAX_TOKENS, AnthropicProvider
from dsh.llm.assemble import StreamAssembler
from dsh.llm.errors import ErrorCode
from dsh.llm.types import Finish, ReasoningDelta, TextDelta, ToolCallDelta, UsageReport
from tests.llm.fake_server import (
    Canned,
    FakeServer,
    an_block_start,
    an_block_stop,
    an_delta,
    an_message_end,
    an_message_start,
    an_text_block,
    anthropic_stream,
    anthropic_text,
    json_error,
    sse,
)
from tests.llm.provider_helpers import (
    SYSTEM,
    assistant,
    collect,
    collect_until_error,
    make_request,
    tool_calls,
    tool_result,
    user,
)

KEY = "sk-ant-test-secret"
EPHEMERAL = {"type": "ephemeral"}


def provider(server: FakeServer, **kwargs: Any) -> AnthropicProvider:
    return AnthropicProvider("anthropic", "fake-model", server.url, KEY, **kwargs)


def test_text_and_usage_map_with_cache_reads_and_writes(server: FakeServer):
    server.queue(
        anthropic_stream(
            an_message_start(12, cache_read=3000, cache_write=400),
            *an_text_block(0, "Hel", "lo"),
            *an_message_end("end_turn", output_tokens=7),
        )
    )

    events = collect(provider(server).stream(make_request(), history=()))

    assert events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        UsageReport(
            Usage(input_tokens=12, output_tokens=7, cache_read_tokens=3000, cache_write_tokens=400)
        ),
        Finish("stop"),
    ]
    assert server.requests[0].path == "/v1/messages"
    headers = server.requests[0].headers
    assert KEY in (
        headers.get("x-api-key"),
        headers.get("authorization", "").removeprefix("Bearer "),
    )


def test_thinking_streams_as_reasoning_deltas(server: FakeServer):
    server.queue(
        anthropic_stream(
            an_message_start(),
            an_block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            an_delta(0, {"type": "thinking_delta", "thinking": "Hmm, "}),
            an_delta(0, {"type": "thinking_delta", "thinking": "yes."}),
            an_delta(0, {"type": "signature_delta", "signature": "sig"}),
            an_block_stop(0),
            *an_text_block(1, "Yes."),
            *an_message_end(),
        )
    )

    events = collect(provider(server).stream(make_request(), history=()))

    assert events[:5] == [
        ReasoningDelta("", new_block=True),
        ReasoningDelta("Hmm, "),
        ReasoningDelta("yes."),
        ReasoningDelta("", signature="sig"),
        TextDelta("Yes."),
    ]
    message = StreamAssembler().feed_all(events).message("a1", "anthropic", "m")
    assert message.content[0] == ReasoningBlock(text="Hmm, yes.", signature="sig")


def test_thinking_and_redacted_thinking_go_back_first_with_signatures_intact(
    server: FakeServer,
):
    server.queue(
        anthropic_stream(
            an_message_start(),
            an_block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            an_delta(0, {"type": "thinking_delta", "thinking": "check a.py"}),
            an_delta(0, {"type": "signature_delta", "signature": "SIG-1"}),
            an_block_stop(0),
            an_block_start(1, {"type": "redacted_thinking", "data": "OPAQUE=="}),
            an_block_stop(1),
            an_block_start(
                2, {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}}
            ),
            an_delta(2, {"type": "input_json_delta", "partial_json": '{"path": "a.py"}'}),
            an_block_stop(2),
            *an_message_end("tool_use"),
        ),
        anthropic_text("done"),
    )
    first = collect(provider(server).stream(make_request(user("go", id="u1")), history=()))
    message = StreamAssembler().feed_all(first).message("a1", "anthropic", "m")
    assert message.content[:2] == (
        ReasoningBlock(text="check a.py", signature="SIG-1"),
        ReasoningBlock(text="", redacted="OPAQUE=="),
    )
    follow_up = make_request(user("go", id="u1"), message, tool_result("toolu_a", "x", id="t1"))
    collect(provider(server).stream(follow_up, history=()))
    sent = server.bodies[1]["messages"][1]
    assert sent["role"] == "assistant"
    assert sent["content"][:3] == [
        {"type": "thinking", "thinking": "check a.py", "signature": "SIG-1"},
        {"type": "redacted_thinking", "data": "OPAQUE=="},
        {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "a.py"}},
    ]


def test_a_reasoning_block_without_signature_encodes_as_before():
    assert encode_json(ReasoningBlock(text="t")) == b'{"type":"reasoning","text":"t"}'


def test_tool_use_input_split_over_deltas_reassembles_with_tool_ordinals(server: FakeServer):
    server.queue(
        anthropic_stream(
            an_message_start(),
            *an_text_block(0, "Reading."),
            an_block_start(
                1, {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}}
            ),
            an_delta(1, {"type": "input_json_delta", "partial_json": '{"pa'}),
            an_delta(1, {"type": "input_json_delta", "partial_json": 'th": "a.py"}'}),
            an_block_stop(1),
            an_block_start(
                2, {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {}}
            ),
            an_delta(2, {"type": "input_json_delta", "partial_json": '{"path": "b.py"}'}),
            an_block_stop(2),
            *an_message_end("tool_use"),
        )
    )

    events = collect(provider(server).stream(make_request(), history=()))

    assert tool_calls(events) == {
        0: ("toolu_a", "read_file", '{"path": "a.py"}'),
        1: ("toolu_b", "read_file", '{"path": "b.py"}'),
    }
    assert events[-1] == Finish("tool-calls")
    starts = [e for e in events if isinstance(e, ToolCallDelta) and e.id]
    assert [(s.index, s.arguments) for s in starts] == [(0, ""), (1, "")]


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool-calls"),
        ("max_tokens", "max-tokens"),
        ("refusal", "filtered"),
    ],
)
def test_stop_reason_maps(server: FakeServer, wire: str, reason: str):
    server.queue(
        anthropic_stream(an_message_start(), *an_text_block(0, "x"), *an_message_end(wire))
    )

    events = collect(provider(server).stream(make_request(), history=()))

    assert events[-1] == Finish(reason)  # type: ignore[arg-type]


def _conversation() -> Any:
    return make_request(
        user("read both", id="u1"),
        assistant(
            "Sure.",
            reasoning="private thoughts",
            calls=(("c1", "read_file", '{"path": "a.py"}'), ("c2", "read_file", "{broken")),
        ),
        tool_result("c1", "print(1)", id="t1"),
        tool_result("c2", "no such file", is_error=True, id="t2"),
        user("now explain", id="u2"),
        params={"temperature": 0.2},
    )


def test_request_merges_roles_and_converts_tool_blocks(server: FakeServer):
    server.queue(anthropic_text("ok"))

    collect(provider(server).stream(_conversation(), history=()))

    body = server.bodies[0]
    assert body["model"] == "fake-model"
    assert body["stream"] is True
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS
    assert body["temperature"] == 0.2
    assert body["tools"] == [
        {
            "name": "read_file",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "read both"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}},
                {"type": "tool_use", "id": "c2", "name": "read_file", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": [{"type": "text", "text": "print(1)"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "c2",
                    "content": [{"type": "text", "text": "no such file"}],
                    "is_error": True,
                },
                {"type": "text", "text": "now explain", "cache_control": EPHEMERAL},
            ],
        },
    ]


def test_cache_breakpoints_are_on_the_system_block_and_the_last_block(server: FakeServer):
    server.queue(anthropic_text("ok"))

    collect(provider(server).stream(_conversation(), history=()))

    body = server.bodies[0]
    assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": EPHEMERAL}]
    assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
    breakpoints = repr(body).count("'cache_control'")
    assert breakpoints == 2


def test_reasoning_without_a_signature_is_not_sent_back(server: FakeServer):
    server.queue(anthropic_text("ok"))

    collect(provider(server).stream(_conversation(), history=()))

    assert "private thoughts" not in repr(server.bodies[0])


def test_default_params_are_merged_under_request_params(server: FakeServer):
    server.queue(anthropic_text("ok"))
    p = provider(server, default_params={"max_tokens": 1000, "temperature": 1.0})

    collect(p.stream(make_request(params={"temperature": 0.0}), history=()))

    assert (server.bodies[0]["max_tokens"], server.bodies[0]["temperature"]) == (1000, 0.0)


# ---- errors -----------------------------------------------------------------------------------


def _error(type_: str, message: str) -> dict:
    return {"type": "error", "error": {"type": type_, "message": message}}


@pytest.mark.parametrize(
    ("status", "body", "code", "retryable"),
    [
        (
            400,
            _error("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
            ErrorCode.CONTEXT_WINDOW_EXCEEDED,
            False,
        ),
        (
            400,
            _error(
                "invalid_request_error",
                "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000",
            ),
            ErrorCode.CONTEXT_WINDOW_EXCEEDED,
            False,
        ),
        (
            400,
            _error("invalid_request_error", "messages: roles must alternate"),
            "BAD_REQUEST",
            False,
        ),
        (404, _error("not_found_error", "no such route"), ErrorCode.BAD_REQUEST, False),
        (401, _error("authentication_error", "invalid x-api-key"), ErrorCode.AUTH, False),
        (403, _error("permission_error", "no access"), ErrorCode.AUTH, False),
        (429, _error("rate_limit_error", "slow down"), ErrorCode.RATE_LIMITED, True),
        (500, _error("api_error", "internal"), ErrorCode.UNAVAILABLE, True),
        (503, _error("api_error", "unavailable"), ErrorCode.UNAVAILABLE, True),
        (529, _error("overloaded_error", "Overloaded"), ErrorCode.UNAVAILABLE, True),
    ],
)
def test_http_errors_map_to_codes(
    server: FakeServer, status: int, body: dict, code: str, retryable: bool
):
    server.queue(json_error(status, body))

    events, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert events == []
    assert (error.code, error.retryable, error.status) == (code, retryable, status)
    assert error.detail == body["error"]["message"]


def test_error_event_inside_the_stream_maps(server: FakeServer):
    server.queue(
        anthropic_stream(
            an_message_start(),
            *an_text_block(0, "partial"),
            _error("overloaded_error", "Overloaded"),
        )
    )

    events, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert events == [TextDelta("partial")]
    assert (error.code, error.retryable) == (ErrorCode.UNAVAILABLE, True)


def test_stream_that_ends_without_a_stop_reason_is_an_invalid_response(server: FakeServer):
    server.queue(anthropic_stream(an_message_start(), *an_text_block(0, "cut off")))

    events, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert events[0] == TextDelta("cut off")
    assert (error.code, error.retryable) == (ErrorCode.INVALID_RESPONSE, False)
    assert error.detail == "stream ended without a stop reason"  # an event stream, cut short


@pytest.mark.parametrize("media", ["text/html; charset=utf-8", "application/json", None])
def test_an_answer_that_is_not_an_event_stream_says_so_and_names_the_base_url(
    server: FakeServer, media: str | None
):
    """A proxy's login page (200, text/html) read as "stream ended without a stop reason"."""
    page = b"<!doctype html>\n<html><body><form>Sign in</form></body></html>\n"
    headers = {"Content-Length": str(len(page))} | ({"Content-Type": media} if media else {})
    server.queue(Canned(200, headers, (page,)))

    events, error = collect_until_error(provider(server).stream(make_request(), history=()))

    said = f"Content-Type {media.partition(';')[0]}" if media else "no Content-Type"
    assert events == [] and (error.code, error.retryable) == (ErrorCode.INVALID_RESPONSE, False)
    assert error.detail == (
        f"the server did not send an event stream ({said}, not text/event-stream): check that "
        f"the base URL {server.url} is the API's (a wrong one, or a proxy's login page, "
        "answers so)"
    )


def test_slow_server_is_a_timeout(server: FakeServer):
    slow = anthropic_text("late")
    server.queue(sse(list(slow.parts), delay=1.0))
    client = anthropic.AsyncAnthropic(base_url=server.url, api_key=KEY, max_retries=0, timeout=0.2)

    _, error = collect_until_error(
        AnthropicProvider(model="m", client=client).stream(make_request(), history=())
    )

    assert (error.code, error.retryable) == (ErrorCode.TIMEOUT, True)


def test_a_refused_loopback_connection_fails_at_once_naming_the_address():
    """Nothing listens on that port of this machine: not retried (dsh.llm.errors)."""
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    p = AnthropicProvider("anthropic", "m", f"http://127.0.0.1:{port}", KEY)

    _, error = collect_until_error(p.stream(make_request(), history=()))

    assert (error.code, error.retryable) == (ErrorCode.CONNECTION, False)
    assert error.detail == (
        f"nothing listens at 127.0.0.1:{port} (connection refused): is the server running?"
    )


def test_a_finished_call_without_arguments_survives_a_reply_cut_off_after_it(server: FakeServer):
    server.queue(
        anthropic_stream(
            an_message_start(),
            *an_text_block(0, "Checking."),
            an_block_start(1, {"type": "tool_use", "id": "toolu_a", "name": "list", "input": {}}),
            an_block_stop(1),  # no input streamed: the call takes no arguments
            an_block_start(2, {"type": "tool_use", "id": "toolu_b", "name": "list", "input": {}}),
            _error("overloaded_error", "Overloaded"),  # the second call never ended
        )
    )

    events, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert error.code == ErrorCode.UNAVAILABLE
    partial = StreamAssembler().feed_all(events).partial_message("a1", "anthropic", "m")
    assert [(c.id, c.arguments) for c in partial.tool_calls()] == [("toolu_a", "{}")]


def test_a_call_with_streamed_arguments_gets_nothing_added_at_its_end(server: FakeServer):
    server.queue(
        anthropic_stream(
            an_message_start(),
            an_block_start(0, {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {}}),
            an_delta(0, {"type": "input_json_delta", "partial_json": ""}),
            an_delta(0, {"type": "input_json_delta", "partial_json": '{"path": "a"}'}),
            an_block_stop(0),
            *an_message_end("tool_use"),
        )
    )

    events = collect(provider(server).stream(make_request(), history=()))

    message = StreamAssembler().feed_all(events).message("a1", "anthropic", "m")
    assert [c.arguments for c in message.tool_calls()] == ['{"path": "a"}']
