"""Edge cases of real streams, driven through the loop against a stand-in server on 127.0.0.1:
the log stays balanced and loadable, what was streamed is kept, and a replay of the session
rebuilds the same log."""

from __future__ import annotations

import msgspec

from dsh.events import AssistantMessageEvent, RequestErrorEvent, TurnEndEvent, encode_event
from dsh.llm.replay import ReplayProvider
from dsh.surface import Session
from tests.agent.conftest import Harness, run
from tests.agent.test_stream_failures import _agent, _dropping, _of
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, oa_chunk, oa_tool_call, openai_stream, openai_text


def _replayed(harness: Harness, *prompts: str) -> Session:
    """The session's turns run again against a replay of its own log."""
    replayed = Session.create(harness.store, cwd=harness.workspace)
    again = harness.agent([])
    again.session = replayed
    again.provider = ReplayProvider(list(harness.session.events))
    for prompt in prompts:
        run(again.run_turn(prompt))
    return replayed


def _comparable(events) -> list[dict]:
    out = []
    for event in events:
        raw = msgspec.json.decode(encode_event(event))
        raw.pop("time")
        out.append(raw)
    return out


def test_a_streamed_tool_call_without_a_name_ends_the_turn_as_an_error_and_keeps_the_text(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    server.queue(
        openai_stream(
            oa_chunk(content="Let me look."),
            oa_chunk(tool_calls=[oa_tool_call(0, id="c1", arguments='{"path": "a"}')]),
            oa_chunk(finish="tool_calls"),
        ),
        openai_text("fine"),
    )
    agent = _agent(harness, server)
    result = run(agent.run_turn("one"))
    assert result.reason == "error" and "INVALID_RESPONSE" in (result.error or "")
    assert harness.types()[-4:] == ["request/error", "assistant/message", "step/end", "turn/end"]
    (error,) = _of(harness, RequestErrorEvent)
    assert error.data.code == "INVALID_RESPONSE" and "has no name" in error.data.message
    (partial,) = _of(harness, AssistantMessageEvent)
    assert partial.data.interrupted and partial.data.error_code == "INVALID_RESPONSE"
    assert partial.data.message.text() == "Let me look." and not partial.data.message.tool_calls()
    assert _of(harness, TurnEndEvent)[0].data.reason.kind == "error"
    assert run(agent.run_turn("two")).text == "fine"
    reopened = harness.reopen()
    assert [encode_event(e) for e in reopened.events] == [
        encode_event(e) for e in harness.session.events
    ]
    assert _comparable(_replayed(harness, "one", "two").events) == _comparable(reopened.events)


def test_a_streamed_tool_call_without_an_id_runs_under_a_made_id_and_replays_the_same(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    (harness.workspace / "a").write_text("alpha\n")
    server.queue(
        openai_stream(
            oa_chunk(content="Let me look."),
            oa_chunk(tool_calls=[oa_tool_call(0, name="read_file", arguments='{"path": "a"}')]),
            oa_chunk(finish="tool_calls"),
        ),
        openai_text("fine"),
    )
    agent = _agent(harness, server)
    result = run(agent.run_turn("one"))
    assert result.reason == "completed" and result.text == "fine"
    assert not _of(harness, RequestErrorEvent)
    reply = _of(harness, AssistantMessageEvent)[0].data.message
    (call,) = reply.tool_calls()
    assert call.id == "a-1-1-call-0"
    (answer,) = [m for m in server.bodies[1]["messages"] if m["role"] == "tool"]
    assert answer["tool_call_id"] == "a-1-1-call-0" and "alpha" in answer["content"]
    reopened = harness.reopen()
    assert _comparable(_replayed(harness, "one").events) == _comparable(reopened.events)


def test_a_server_that_ignores_max_tokens_ends_the_turn_as_a_reply_cut_at_the_limit(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    # Pieces of 4 characters, a token each; no finish and no end of stream.
    server.queue(openai_stream(*(oa_chunk(content="abc ") for _ in range(3000)), done=False))
    agent = _agent(harness, server, params={"max_tokens": 200})
    result = run(agent.run_turn("one"))
    assert result.reason == "max-tokens"
    assert "cut at its output limit (200 tokens)" in (result.error or "")
    (reply,) = _of(harness, AssistantMessageEvent)
    assert not reply.data.interrupted
    assert reply.data.message.text() == "abc " * (200 + 100 + 256 + 1)
    assert not _of(harness, RequestErrorEvent)


def test_a_stream_cut_before_any_complete_content_replays_to_the_same_log(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    # The only thing streamed is half a tool call: the stream had started, so the retryable
    # error is not retried; a replay must not retry it either.
    server.queue(
        _dropping(
            oa_chunk(tool_calls=[oa_tool_call(0, id="c1", name="read_file", arguments='{"pa')]),
            oa_chunk(tool_calls=[oa_tool_call(0, arguments='th": "x"}')]),
            oa_chunk(finish="tool_calls"),
            after=1,
        ),
        openai_text("fine"),
    )
    agent = _agent(harness, server)
    assert run(agent.run_turn("one")).reason == "error"
    assert run(agent.run_turn("two")).text == "fine"
    assert "llm/retry" not in harness.types()
    (error,) = _of(harness, RequestErrorEvent)
    assert error.data.code == "CONNECTION" and error.data.retryable
    assert len(server.requests) == 2
    replayed = _replayed(harness, "one", "two")
    assert _comparable(replayed.events) == _comparable(harness.session.events)
