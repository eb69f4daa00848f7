"""What was streamed survives a provider failure (a stand-in server on 127.0.0.1 that drops the
connection after three chunks, or goes quiet), and no half-streamed tool call is sent back."""

from __future__ import annotations

import logging
import re
import threading

import msgspec

from dsh.agent import rebuild_requests
from dsh.events import (
    AssistantMessageEvent,
    RequestErrorEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    encode_event,
)
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.llm.replay import ReplayProvider
from dsh.surface import Session
from dsh.transcript import MessageItem, render_human_transcript, transcript_items
from tests.agent.conftest import Harness, run
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import (
    Canned,
    FakeServer,
    oa_chunk,
    oa_tool_call,
    openai_stream,
    openai_text,
)


def _dropping(*payloads: dict, after: int) -> Canned:
    """A chunked SSE stream whose connection is closed after ``after`` chunks."""
    stream = openai_stream(*payloads)
    return Canned(stream.status, stream.headers, stream.parts, chunked=True, drop_after=after)


def _agent(harness: Harness, server: FakeServer, **config):  # noqa: F811
    agent = harness.agent([], **config)
    agent.provider = OpenAICompatProvider("openai-compatible", "m", server.url + "/v1", "k")
    return agent


def _of(harness: Harness, kind):
    return [e for e in harness.session.events if isinstance(e, kind)]


def test_a_dropped_stream_logs_the_streamed_text_marked_after_its_error(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    server.queue(
        _dropping(
            oa_chunk(content="The answer "),
            oa_chunk(content="is forty"),
            oa_chunk(content="-two, because"),
            oa_chunk(content=" never sent"),
            oa_chunk(finish="stop"),
            after=3,
        )
    )
    result = run(_agent(harness, server).run_turn("question"))
    assert result.reason == "error" and "CONNECTION" in (result.error or "")
    tags = harness.types()
    error_at = tags.index("request/error")
    assert tags[error_at : error_at + 4] == [
        "request/error",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    (error,) = _of(harness, RequestErrorEvent)
    (partial,) = _of(harness, AssistantMessageEvent)
    assert error.data.code == "CONNECTION" and error.data.retryable
    assert partial.data.interrupted and partial.data.error_code == "CONNECTION"
    assert partial.data.message.text() == "The answer is forty-two, because"
    assert _of(harness, TurnEndEvent)[0].data.reason.kind == "error"
    # Shown in the transcript, and the log reloads with it.
    items = [i for i in transcript_items(harness.session.events) if isinstance(i, MessageItem)]
    assert [(i.message.text(), i.cut_by) for i in items][-1] == (
        "The answer is forty-two, because",
        "CONNECTION",
    )
    shown = render_human_transcript(harness.session.events)
    cut = "Assistant: The answer is forty-two, because\n(the reply was cut off: CONNECTION)"
    assert cut in shown
    assert shown.endswith(")") and "(Turn failed: CONNECTION" in shown.split(cut)[1]
    reopened = harness.reopen()
    assert [encode_event(e) for e in reopened.events] == [
        encode_event(e) for e in harness.session.events
    ]


def test_the_next_request_carries_the_partial_and_every_request_rebuilds_from_the_log(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    server.queue(
        _dropping(oa_chunk(content="half "), oa_chunk(content="an answer"), after=2),
        openai_text("whole answer"),
    )
    agent = _agent(harness, server)
    assert run(agent.run_turn("first")).reason == "error"
    assert run(agent.run_turn("go on")).text == "whole answer"
    wire = server.bodies[1]["messages"]
    cut = "half an answer\n\n[This reply was cut off here: the model server failed (CONNECTION).]"
    assert {"role": "assistant", "content": cut} in wire
    calls = list(rebuild_requests(harness.session.events))
    assert len(calls) == 2  # the partial belongs to its request/error, not a call of its own
    sent = [body["messages"] for body in server.bodies]
    from dsh.llm.openai_compat import to_wire_messages

    assert [to_wire_messages(r, reasoning_back=False) for _, r in calls] == sent


def test_a_half_streamed_tool_call_is_never_sent_back_and_a_complete_one_is_answered(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    server.queue(
        _dropping(
            oa_chunk(content="Reading both."),
            oa_chunk(
                tool_calls=[
                    oa_tool_call(0, id="c0", name="read_file", arguments='{"path": "a.txt"}')
                ]
            ),
            oa_chunk(
                tool_calls=[oa_tool_call(1, id="c1", name="read_file", arguments='{"path": "b')]
            ),
            oa_chunk(tool_calls=[oa_tool_call(1, arguments='.txt"}')]),
            oa_chunk(finish="tool_calls"),
            after=3,
        ),
        openai_text("done"),
    )
    (harness.workspace / "a.txt").write_text("alpha")
    agent = _agent(harness, server)
    assert run(agent.run_turn("read a and b")).reason == "error"
    (partial,) = _of(harness, AssistantMessageEvent)
    assert [c.id for c in partial.data.message.tool_calls()] == ["c0"]
    (result,) = _of(harness, ToolResultEvent)
    assert result.data.error is not None and result.data.error.code == "NOT_RUN"
    assert [e.data.call_id for e in _of(harness, ToolCallEvent)] == ["c0"]
    assert harness.session.tool_pairing_balanced_after(harness.session.nodes[-1])
    run(agent.run_turn("again"))
    wire = server.bodies[1]["messages"]
    sent_calls = [c["id"] for m in wire for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in wire if m["role"] == "tool"]
    assert sent_calls == answered == ["c0"]
    assert "alpha" not in str(wire)  # the complete call was answered, never run
    assert "cut off here" not in str(wire)  # its NOT_RUN result already says the reply was cut


def test_a_stream_that_goes_quiet_fails_with_a_retryable_timeout_and_keeps_its_text(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    release = threading.Event()
    quiet = openai_stream(oa_chunk(content="thinking about"), oa_chunk(finish="stop"))
    server.queue(Canned(quiet.status, quiet.headers, quiet.parts, hold=release, hold_before=1))
    try:
        result = run(_agent(harness, server, stream_idle_timeout=3).run_turn("q"))
    finally:
        release.set()
    assert result.reason == "error"
    (error,) = _of(harness, RequestErrorEvent)
    assert error.data.code == "TIMEOUT" and error.data.retryable
    assert "stream_idle_timeout" in error.data.message
    (partial,) = _of(harness, AssistantMessageEvent)
    assert partial.data.message.text() == "thinking about"
    assert partial.data.error_code == "TIMEOUT"


def test_replaying_a_session_with_a_failed_stream_rebuilds_the_same_log(
    harness: Harness,
    server: FakeServer,  # noqa: F811
):
    server.queue(
        _dropping(oa_chunk(content="cut "), oa_chunk(content="here"), after=2),
        openai_text("fine"),
    )
    agent = _agent(harness, server)
    run(agent.run_turn("one"))
    run(agent.run_turn("two"))
    recorded = list(harness.session.events)
    replayed = Session.create(harness.store, cwd=harness.workspace)
    again = harness.agent([])
    again.session = replayed
    again.provider = ReplayProvider(recorded)
    run(again.run_turn("one"))
    run(again.run_turn("two"))
    assert _comparable(replayed.events) == _comparable(recorded)
    assert any(isinstance(i, MessageItem) for i in transcript_items(replayed.events))


def _comparable(events) -> list[dict]:
    out = []
    for event in events:
        raw = msgspec.json.decode(encode_event(event))
        raw.pop("time")
        out.append(raw)
    return out


def test_a_retried_call_is_said_as_a_warning_naming_the_setting(
    harness: Harness,
    server: FakeServer,  # noqa: F811
    caplog,
):
    """A slow server that sends nothing for ``stream_idle_timeout`` is asked again: the retry
    was logged but shown nowhere (the UI kept counting the wait); now it is a warning."""
    release = threading.Event()
    quiet = openai_text("never seen")
    server.queue(
        Canned(quiet.status, quiet.headers, quiet.parts, hold=release, hold_before=0),
        openai_text("fine"),
    )
    try:
        with caplog.at_level(logging.WARNING, logger="dsh"):
            # the held reply always outlasts the timeout; the second must not, even on a
            # loaded machine (0.2 s failed it there: that one timed out too, a second retry)
            result = run(_agent(harness, server, stream_idle_timeout=3).run_turn("q"))
    finally:
        release.set()
    assert result.reason == "completed" and result.text == "fine", (result, caplog.text)
    said = [r.getMessage() for r in caplog.records if "sending it again" in r.getMessage()]
    assert len(said) == 1
    assert re.fullmatch(
        r"no data from the model for 3 s \(provider\.stream_idle_timeout\): sending it again"
        r" (now|in \d+\.\d s) \(attempt 2 of 4\); a slow model \(a local one after a compaction"
        r" pass\) may need it raised",
        said[0],
    )
