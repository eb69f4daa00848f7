"""The OpenAI-compatible adapter against a real local HTTP server speaking chat-completions SSE."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import openai
import pytest

from dsh.events import Usage
from dsh.llm.errors import ErrorCode
from dsh.llm.openai_compat import KEYLESS_HINT, TOOL_ERROR_PREFIX, OpenAICompatProvider
from dsh.llm.types import Finish, ReasoningDelta, TextDelta, ToolCallDelta, UsageReport
from tests.llm.fake_server import (
    Canned,
    FakeServer,
    json_error,
    oa_chunk,
    oa_tool_call,
    oa_usage,
    openai_stream,
    openai_text,
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

KEY = "sk-test-secret-key"


def provider(server: FakeServer, name: str = "deepseek", **kwargs: Any) -> OpenAICompatProvider:
    return OpenAICompatProvider(name, "fake-model", server.url, KEY, **kwargs)


def test_text_and_usage_map_with_deepseek_cache_hits_excluded_from_input(server: FakeServer):
    server.queue(
        openai_stream(
            oa_chunk(content="Hel"),
            oa_chunk(content="lo"),
            oa_chunk(finish="stop"),
            oa_chunk(no_choices=True, usage=oa_usage(1000, 20, cache_hit=800)),
        )
    )

    events = collect(provider(server).stream(make_request(), history=()))

    assert events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        UsageReport(Usage(input_tokens=200, output_tokens=20, cache_read_tokens=800)),
        Finish("stop"),
    ]
    assert server.requests[0].path == "/chat/completions"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_openai_cached_tokens_count_as_cache_reads_and_reasoning_tokens_are_reported(
    server: FakeServer,
):
    usage = oa_usage(500, 40, cached_tokens=300, reasoning=25)
    server.queue(openai_text("ok", usage=usage))

    events = collect(provider(server, name="openai").stream(make_request(), history=()))

    assert (
        UsageReport(
            Usage(input_tokens=200, output_tokens=40, cache_read_tokens=300, reasoning_tokens=25)
        )
        in events
    )


def test_tool_call_arguments_split_over_chunks_reassemble(server: FakeServer):
    server.queue(
        openai_stream(
            oa_chunk(tool_calls=[oa_tool_call(0, id="call_a", name="read_file")]),
            oa_chunk(tool_calls=[oa_tool_call(0, arguments='{"pa')]),
            oa_chunk(tool_calls=[oa_tool_call(0, arguments='th": "a.')]),
            oa_chunk(tool_calls=[oa_tool_call(1, id="call_b", name="read_file", arguments="{")]),
            oa_chunk(tool_calls=[oa_tool_call(0, arguments='py"}')]),
            oa_chunk(tool_calls=[oa_tool_call(1, arguments='"path": "b.py"}')]),
            oa_chunk(finish="tool_calls"),
            oa_chunk(no_choices=True, usage=oa_usage(10, 5)),
        )
    )

    events = collect(provider(server).stream(make_request(), history=()))

    assert tool_calls(events) == {
        0: ("call_a", "read_file", '{"path": "a.py"}'),
        1: ("call_b", "read_file", '{"path": "b.py"}'),
    }
    assert events[-1] == Finish("tool-calls")


def test_repeated_tool_call_ids_are_passed_on_once(server: FakeServer):
    server.queue(
        openai_stream(
            oa_chunk(tool_calls=[oa_tool_call(0, id="c", name="read_file", arguments="{")]),
            oa_chunk(tool_calls=[oa_tool_call(0, id="c", name="read_file", arguments="}")]),
            oa_chunk(finish="tool_calls"),
        )
    )

    events = collect(provider(server).stream(make_request(), history=()))

    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(d.id, d.name, d.arguments) for d in deltas] == [
        ("c", "read_file", "{"),
        (None, None, "}"),
    ]


def test_a_tool_call_name_sent_after_its_id_is_kept(server: FakeServer):
    server.queue(
        openai_stream(
            oa_chunk(tool_calls=[oa_tool_call(0, id="c")]),
            oa_chunk(tool_calls=[oa_tool_call(0, name="read_file", arguments='{"path": ')]),
            oa_chunk(tool_calls=[oa_tool_call(0, id="c", name="read_file", arguments='"a"}')]),
            oa_chunk(finish="tool_calls"),
        )
    )

    events = collect(provider(server).stream(make_request(), history=()))

    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(d.id, d.name) for d in deltas] == [("c", None), (None, "read_file"), (None, None)]
    assert tool_calls(events) == {0: ("c", "read_file", '{"path": "a"}')}


def test_stop_with_tool_calls_finishes_as_tool_calls(server: FakeServer):
    server.queue(
        openai_stream(
            oa_chunk(tool_calls=[oa_tool_call(0, id="c", name="read_file", arguments="{}")]),
            oa_chunk(finish="stop"),
        )
    )

    events = collect(provider(server).stream(make_request(), history=()))

    assert events[-1] == Finish("tool-calls")


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        ("stop", "stop"),
        ("length", "max-tokens"),
        ("tool_calls", "tool-calls"),
        ("content_filter", "filtered"),
    ],
)
def test_finish_reason_maps(server: FakeServer, wire: str, reason: str):
    server.queue(openai_stream(oa_chunk(content="x"), oa_chunk(finish=wire)))

    events = collect(provider(server).stream(make_request(), history=()))

    assert events[-1] == Finish(reason)  # type: ignore[arg-type]


def test_reasoning_content_streams_as_reasoning_deltas(server: FakeServer):
    server.queue(
        openai_stream(
            oa_chunk(reasoning="Let me "),
            oa_chunk(reasoning="think."),
            oa_chunk(content="Answer."),
            oa_chunk(finish="stop"),
        )
    )

    events = collect(provider(server).stream(make_request(), history=()))

    assert events[:3] == [ReasoningDelta("Let me "), ReasoningDelta("think."), TextDelta("Answer.")]


def _assistant_with_reasoning_request() -> Any:
    return make_request(
        user("read a.py"),
        assistant(
            reasoning="I should read it.", calls=(("call_a", "read_file", '{"path":"a.py"}'),)
        ),
        tool_result("call_a", "print(1)"),
    )


def test_reasoning_is_passed_back_to_deepseek(server: FakeServer):
    server.queue(openai_text("done"))

    collect(
        provider(server, name="deepseek").stream(_assistant_with_reasoning_request(), history=())
    )

    sent = server.bodies[0]["messages"][2]
    assert sent["role"] == "assistant"
    assert sent["reasoning_content"] == "I should read it."


def test_reasoning_is_not_sent_to_other_compatible_servers(server: FakeServer):
    server.queue(openai_text("done"))

    collect(provider(server, name="openai").stream(_assistant_with_reasoning_request(), history=()))

    assert "reasoning_content" not in server.bodies[0]["messages"][2]


def test_assistant_content_is_never_null_on_the_wire(server: FakeServer):
    server.queue(openai_text("done"))

    collect(provider(server).stream(_assistant_with_reasoning_request(), history=()))

    sent = server.bodies[0]["messages"][2]
    assert sent == {
        "role": "assistant",
        "content": "",
        "reasoning_content": "I should read it.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path":"a.py"}'},
            }
        ],
    }


def test_tool_results_are_sent_as_role_tool_and_errors_are_marked(server: FakeServer):
    server.queue(openai_text("done"))
    request = make_request(
        user("go"),
        assistant(calls=(("c1", "read_file", "{}"), ("c2", "read_file", "{}"))),
        tool_result("c1", "contents", id="t1"),
        tool_result("c2", "no such file", is_error=True, id="t2"),
    )

    collect(provider(server).stream(request, history=()))

    assert server.bodies[0]["messages"][3:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "contents"},
        {"role": "tool", "tool_call_id": "c2", "content": TOOL_ERROR_PREFIX + "no such file"},
    ]


def test_request_body_has_system_first_tools_params_and_usage_streaming(server: FakeServer):
    server.queue(openai_text("done"))
    p = provider(server, default_params={"max_tokens": 100, "temperature": 0.5})

    collect(p.stream(make_request(user("hi"), params={"temperature": 0.0}), history=()))

    body = server.bodies[0]
    assert body["model"] == "fake-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 100
    assert body["temperature"] == 0.0
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "hi"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]


def test_no_system_and_no_tools_are_left_out(server: FakeServer):
    server.queue(openai_text("done"))

    collect(provider(server).stream(make_request(system=None, tools=()), history=()))

    body = server.bodies[0]
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    assert "tools" not in body


# ---- errors -----------------------------------------------------------------------------------


def _error(message: str, type_: str = "invalid_request_error", code: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


DEEPSEEK_OVERFLOW = (
    "This model's maximum context length is 131072 tokens. However, you requested 140000 "
    "tokens (139000 in the messages, 1000 in the completion). Please reduce the length of the "
    "messages or completion."
)


@pytest.mark.parametrize(
    ("status", "body", "code", "retryable"),
    [
        (400, _error(DEEPSEEK_OVERFLOW), ErrorCode.CONTEXT_WINDOW_EXCEEDED, False),
        (400, _error("too long", code="context_length_exceeded"), "CONTEXT_WINDOW_EXCEEDED", False),
        (
            400,
            _error("the request exceeds the available context size"),
            "CONTEXT_WINDOW_EXCEEDED",
            False,
        ),
        (  # Ollama's wording
            400,
            _error("the input length exceeds the context length", "api_error"),
            "CONTEXT_WINDOW_EXCEEDED",
            False,
        ),
        (400, _error("Invalid 'messages[1].role'"), ErrorCode.BAD_REQUEST, False),
        (404, _error("model not found"), ErrorCode.BAD_REQUEST, False),
        (422, {"detail": "unprocessable"}, ErrorCode.BAD_REQUEST, False),
        (401, _error("Incorrect API key", "authentication_error"), ErrorCode.AUTH, False),
        (403, _error("forbidden", "permission_error"), ErrorCode.AUTH, False),
        (429, _error("Rate limit reached", "rate_limit_exceeded"), ErrorCode.RATE_LIMITED, True),
        (500, _error("boom", "server_error"), ErrorCode.UNAVAILABLE, True),
        (502, _error("bad gateway", "server_error"), ErrorCode.UNAVAILABLE, True),
        (503, _error("Server is busy", "server_error"), ErrorCode.UNAVAILABLE, True),
        (504, _error("gateway timeout", "server_error"), ErrorCode.UNAVAILABLE, True),
        (529, _error("overloaded", "server_error"), ErrorCode.UNAVAILABLE, True),
    ],
)
def test_http_errors_map_to_codes(
    server: FakeServer, status: int, body: dict, code: str, retryable: bool
):
    server.queue(json_error(status, body))

    events, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert events == []
    assert (error.code, error.retryable, error.status) == (code, retryable, status)
    assert KEY not in str(error)


def test_a_server_sent_no_key_that_refuses_for_want_of_one_says_how_to_give_it(
    server: FakeServer,
):
    # OPENAI_API_KEY goes only to api.openai.com: someone who kept a compatible server's key
    # there would see a bare "Incorrect API key" without this
    server.queue(json_error(401, _error("Incorrect API key", "authentication_error")))
    keyless = OpenAICompatProvider("openai-compatible", "m", server.url, None)

    _, error = collect_until_error(keyless.stream(make_request(), history=()))

    assert (error.code, error.status) == (ErrorCode.AUTH, 401)
    assert error.detail == f"Incorrect API key ({KEYLESS_HINT})"
    assert "provider.api_key_env" in KEYLESS_HINT

    server.queue(json_error(401, _error("Incorrect API key", "authentication_error")))
    _, keyed = collect_until_error(provider(server).stream(make_request(), history=()))
    assert keyed.detail == "Incorrect API key"  # a key was sent: it is the key that is wrong


def test_overflow_error_keeps_the_servers_message(server: FakeServer):
    server.queue(json_error(400, _error(DEEPSEEK_OVERFLOW)))

    _, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert "maximum context length is 131072" in error.detail


def test_error_inside_the_stream_maps_and_follows_what_was_streamed(server: FakeServer):
    server.queue(
        openai_stream(
            oa_chunk(content="partial"),
            {"error": {"message": "Server overloaded", "type": "server_error"}},
            done=False,
        )
    )

    events, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert events == [TextDelta("partial")]
    assert (error.code, error.retryable) == (ErrorCode.UNAVAILABLE, True)


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (500, ErrorCode.UNAVAILABLE, True),
        (429, ErrorCode.RATE_LIMITED, True),
        (400, "BAD_REQUEST", False),
    ],
)
def test_an_error_inside_the_stream_with_an_http_status_as_its_code_maps_like_that_status(
    server: FakeServer, status: int, code: str, retryable: bool
):
    """Some servers put the HTTP status in the error's ``code`` (``"code": 500``): it was
    UNKNOWN, so not retried even before the first event."""
    server.queue(openai_stream({"error": {"message": "Internal server error", "code": status}}))

    _, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert (error.code, error.retryable) == (code, retryable)


def test_overflow_error_inside_the_stream_maps_to_context_window_exceeded(server: FakeServer):
    server.queue(
        openai_stream({"error": {"message": DEEPSEEK_OVERFLOW, "type": "invalid_request_error"}})
    )

    _, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert (error.code, error.retryable) == (ErrorCode.CONTEXT_WINDOW_EXCEEDED, False)


def test_an_event_stream_that_ends_without_finish_says_the_connection_closed_mid_reply(
    server: FakeServer,
):
    """A proxy whose server died closes the stream cleanly: it was INVALID_RESPONSE "stream
    ended without a finish reason", blaming the server's output, not the dropped connection."""
    server.queue(openai_stream(oa_chunk(content="cut off"), done=False))

    events, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert events == [TextDelta("cut off")]
    assert (error.code, error.retryable) == (ErrorCode.CONNECTION, True)
    assert error.detail == (
        "the server closed the connection mid-reply (7 characters received), without a finish "
        "reason"
    )


def test_a_connection_dropped_mid_body_says_how_much_of_the_reply_came(server: FakeServer):
    """A killed llama-server: the chunked body breaks off. It was said as httpx's own text
    (``Connection error. (RemoteProtocolError: peer closed connection without sending complete
    message body (incomplete chunked read))``)."""
    stream = openai_stream(
        oa_chunk(content="Once upon"), oa_chunk(content=" a time"), oa_chunk(finish="stop")
    )
    server.queue(Canned(200, stream.headers, stream.parts, chunked=True, drop_after=2))

    events, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert events == [TextDelta("Once upon"), TextDelta(" a time")]
    assert (error.code, error.retryable) == (ErrorCode.CONNECTION, True)
    assert error.detail == "the server closed the connection mid-reply (16 characters received)"


def test_an_event_stream_closed_before_anything_came_is_retried_as_a_connection(
    server: FakeServer,
):
    server.queue(openai_stream(done=False))

    events, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert events == [] and (error.code, error.retryable) == (ErrorCode.CONNECTION, True)
    assert error.detail == (
        "the server closed the connection before the reply's first character, without a finish "
        "reason"
    )


@pytest.mark.parametrize("media", ["text/html; charset=utf-8", "application/json", None])
def test_an_answer_that_is_not_an_event_stream_says_so_and_names_the_base_url(
    server: FakeServer, media: str | None
):
    """A proxy's login page (200, text/html) read as "stream ended without a finish reason"."""
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


def test_malformed_json_in_the_stream_is_an_invalid_response(server: FakeServer):
    server.queue(openai_stream("{not json", done=False))

    _, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert error.code == ErrorCode.INVALID_RESPONSE


def test_slow_server_is_a_timeout(server: FakeServer):
    server.queue(openai_stream(oa_chunk(content="late"), oa_chunk(finish="stop"), delay=1.0))
    client = openai.AsyncOpenAI(base_url=server.url, api_key=KEY, max_retries=0, timeout=0.2)

    _, error = collect_until_error(
        OpenAICompatProvider("deepseek", client=client).stream(make_request(), history=())
    )

    assert (error.code, error.retryable) == (ErrorCode.TIMEOUT, True)


def test_a_refused_loopback_connection_fails_at_once_naming_the_address():
    """Nothing listens on that port of this machine: not retried (dsh.llm.errors)."""
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    p = OpenAICompatProvider("deepseek", "m", f"http://127.0.0.1:{port}", KEY)

    _, error = collect_until_error(p.stream(make_request(), history=()))

    assert (error.code, error.retryable) == (ErrorCode.CONNECTION, False)
    assert error.detail == (
        f"nothing listens at 127.0.0.1:{port} (connection refused): is the server running?"
    )


def test_key_is_sent_as_a_header_and_never_appears_in_events(server: FakeServer):
    server.queue(openai_text("hi"))

    events = collect(provider(server).stream(make_request(), history=()))

    assert KEY not in repr(events)
    assert KEY not in repr(server.bodies[0])


def test_caller_stopping_early_closes_the_stream_cleanly(server: FakeServer):
    server.queue(openai_text("first"), openai_text("second"))
    p = provider(server)

    async def first_event_then_stop() -> Any:
        stream = p.stream(make_request(), history=())
        async for event in stream:
            await stream.aclose()  # type: ignore[attr-defined]
            return event
        return None

    assert asyncio.run(first_event_then_stop()) == TextDelta("first")
    assert collect(p.stream(make_request(), history=()))[0] == TextDelta("second")


def test_a_llama_server_without_jinja_is_not_retried_and_says_to_start_it_with_jinja(
    server: FakeServer,
):
    """llama-server --no-jinja answers every request carrying tools with this 500 (its exact
    body): it was UNAVAILABLE, retried three times, and said nothing of the flag."""
    body = (
        b'{"error":{"code":500,"message":"tools param requires --jinja flag",'
        b'"type":"server_error"}}'
    )
    server.queue(Canned(500, {"Content-Type": "application/json; charset=utf-8"}, (body,)))

    events, error = collect_until_error(provider(server).stream(make_request(), history=()))

    assert events == [] and (error.code, error.retryable) == (ErrorCode.BAD_REQUEST, False)
    assert error.detail == (
        "tools param requires --jinja flag: start llama-server with --jinja (dsh sends tool "
        "schemas)"
    )
