"""Tool calls written as text by small models: recovered on openai-compatible routes, logged as
ordinary tool calls marked ``fromText``, run through approval, and replayed byte-identically."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.agent import rebuild_requests
from dsh.agent.runtime import resolve_route
from dsh.agent.wiring import build_agent
from dsh.config import ProviderSettings, Settings, ToolSettings
from dsh.events import AssistantMessageEvent, Event, ToolCallEvent, ToolResultEvent, encode_event
from dsh.llm.replay import ReplayProvider
from dsh.llm.types import ModelRequest, Provider, StreamEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from tests.agent.conftest import Harness, run
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, oa_chunk, openai_stream, openai_text

FENCED = '```json\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n```'


def _text_reply(text: str):
    return openai_stream(
        oa_chunk(content=text[:10]), oa_chunk(content=text[10:]), oa_chunk(finish="stop")
    )


def _local_agent(tmp_path: Path, url: str, *, approval: str = "auto", **provider):
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text("alpha beta\n")
    settings = Settings(
        provider=ProviderSettings(name="openai-compatible", model="qwen", base_url=url, **provider),
        tools=ToolSettings(approval=approval),  # type: ignore[arg-type]
    )
    session = Session.create(JsonlStore(tmp_path / "home"), cwd=workspace)
    route = resolve_route(settings, environ={})
    policy = ApprovalPolicy(settings.tools.approval)
    return build_agent(session, settings, route, workspace=workspace, policy=policy, environ={})


def test_a_fenced_json_reply_runs_as_a_tool_call_marked_recovered(tmp_path, server: FakeServer):  # noqa: F811
    server.queue(_text_reply(FENCED), openai_text("It says alpha beta."))
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("what is in notes.txt?"))
    assert result.reason == "completed" and result.text == "It says alpha beta."
    events = agent.session.events
    first = next(e for e in events if isinstance(e, AssistantMessageEvent))
    assert first.data.recovered_from_text == FENCED
    assert first.data.message.text() == ""
    (call,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert call.data.from_text and call.data.name == "read_file"
    assert call.data.call_id == "text-1-1-0"
    (result_event,) = [e for e in events if isinstance(e, ToolResultEvent)]
    (block,) = result_event.data.message.content
    assert result_event.data.error is None and "alpha beta" in block.content[0].text
    assert "alpha beta" in json.dumps(server.bodies[1]["messages"])
    wire = server.bodies[1]["messages"]
    assistant = next(m for m in wire if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["id"] == "text-1-1-0"
    assert assistant["tool_calls"][0]["function"] == {
        "name": "read_file",
        "arguments": '{"path": "notes.txt"}',
    }
    assert next(m for m in wire if m["role"] == "tool")["tool_call_id"] == "text-1-1-0"
    assert server.bodies[0]["max_tokens"] == 4096  # the local route is bounded by default


def test_a_qwen_tool_call_tag_reply_runs_as_a_tool_call(tmp_path, server: FakeServer):  # noqa: F811
    """Qwen's template writes ``<tool_call>{…}</tool_call>``; a server without a tool parser
    streams it as content, split anywhere (here inside the tag)."""
    tagged = '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call>'
    server.queue(_text_reply(tagged), openai_text("It says alpha beta."))
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("what is in notes.txt?"))
    assert result.reason == "completed" and result.text == "It says alpha beta."
    (call,) = [e for e in agent.session.events if isinstance(e, ToolCallEvent)]
    assert call.data.from_text and call.data.name == "read_file"
    (result_event,) = [e for e in agent.session.events if isinstance(e, ToolResultEvent)]
    assert result_event.data.error is None
    assert "alpha beta" in json.dumps(server.bodies[1]["messages"])


def test_a_text_call_with_arguments_its_tool_refuses_is_answered_not_left_as_text(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """A reply of calls to registered tools, one with an argument the tool does not take: every
    call is a call, the bad one answered INVALID_ARGUMENT (nothing run) so the model can fix
    it. It used to leave the whole reply text, the good calls with it."""
    reply = (
        '{"name": "read_file", "arguments": {"path": "notes.txt"}}\n'
        '{"name": "read_file", "arguments": {"file": "notes.txt"}}'
    )
    server.queue(_text_reply(reply), openai_text("It says alpha beta."))
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("what is in notes.txt?"))
    assert result.text == "It says alpha beta."
    results = [e for e in agent.session.events if isinstance(e, ToolResultEvent)]
    assert [r.data.error.code if r.data.error else None for r in results] == [
        None,
        "INVALID_ARGUMENT",
    ]
    assert "'path'" in results[1].data.message.content[0].content[0].text


def test_a_text_call_to_an_unknown_tool_runs_nothing_and_the_model_is_told(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """A whole reply of calls, one naming no tool: none runs (the reply is not split), and the
    model is told which tool does not exist (tests/agent/test_unread_text_calls.py)."""
    reply = (
        '{"name": "read_file", "arguments": {"path": "notes.txt"}}\n'
        '{"name": "delete_everything", "arguments": {}}'
    )
    server.queue(_text_reply(reply), openai_text("ok"))
    agent = _local_agent(tmp_path, server.url + "/v1")
    assert run(agent.run_turn("q")).text == "ok"
    assert not any(isinstance(e, ToolCallEvent) for e in agent.session.events)
    assert "no tool `delete_everything`" in json.dumps(server.bodies[1]["messages"])


def test_a_recovered_call_goes_through_approval_as_usual(tmp_path, server: FakeServer):  # noqa: F811
    call = '{"name": "bash", "arguments": {"command": "echo pwned > owned.txt"}}'
    server.queue(_text_reply(call), openai_text("ok"))
    agent = _local_agent(tmp_path, server.url + "/v1", approval="read-only")
    run(agent.run_turn("run it"))
    (result,) = [e for e in agent.session.events if isinstance(e, ToolResultEvent)]
    assert result.data.error is not None and result.data.error.code == "DENIED"
    assert not (agent.workspace / "owned.txt").exists()


def test_text_that_is_not_a_valid_call_stays_text(tmp_path, server: FakeServer):  # noqa: F811
    reply = 'I would call {"name": "read_file", "arguments": {"path": "notes.txt"}}'
    server.queue(_text_reply(reply))
    agent = _local_agent(tmp_path, server.url + "/v1")
    assert run(agent.run_turn("q")).text == reply
    assert not any(isinstance(e, ToolCallEvent) for e in agent.session.events)


def test_recovery_can_be_turned_off_per_route(tmp_path, server: FakeServer):  # noqa: F811
    server.queue(_text_reply(FENCED))
    agent = _local_agent(tmp_path, server.url + "/v1", text_tool_calls=False)
    assert run(agent.run_turn("q")).text == FENCED
    assert not any(isinstance(e, ToolCallEvent) for e in agent.session.events)


# ---- replay: byte-identical ----------------------------------------------------------------


class _Recording:
    """Wraps a provider and keeps every conversation request it was sent."""

    def __init__(self, inner: Provider) -> None:
        self.inner, self.name, self.requests = inner, inner.name, []

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        return self.inner.stream(request, history=history)


def _comparable(events: Sequence[Event]) -> list[bytes]:
    out = []
    for event in events:
        raw = msgspec.json.decode(encode_event(event))
        raw.pop("time")
        out.append(msgspec.json.encode(raw))
    return out


_paths = st.sampled_from(["notes.txt", "missing.txt", "dir/x.md", "ünï code.txt"])


def _call_text(path: str, fenced: bool, lines: int) -> str:
    body = json.dumps({"name": "read_file", "arguments": {"path": path, "limit": lines}})
    return f"```json\n{body}\n```" if fenced else body


_call_texts = st.builds(_call_text, _paths, st.booleans(), st.integers(1, 50))


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_call_texts, min_size=1, max_size=3), st.text(max_size=30))
def test_recovered_calls_replay_byte_identically_and_every_request_rebuilds(
    tmp_path_factory, texts, final
):
    root = tmp_path_factory.mktemp("replay")
    harness = Harness(root)
    (harness.workspace / "notes.txt").write_text("one\ntwo\n")
    script = [{"text": t} for t in texts] + [{"text": final or "done"}]
    agent = harness.agent(script, text_tool_calls=True)
    recording = _Recording(agent.provider)
    agent.provider = recording
    run(agent.run_turn("read things"))
    recorded = list(harness.session.events)
    calls = [e for e in recorded if isinstance(e, ToolCallEvent)]
    assert len(calls) == len(texts) and all(c.data.from_text for c in calls)
    # Every request the model was sent is rebuilt byte-equal from the log.
    rebuilt = [r for _, r in rebuild_requests(recorded)]
    assert [msgspec.json.encode(r.messages) for r in rebuilt] == [
        msgspec.json.encode(r.messages) for r in recording.requests
    ]
    # Replaying the log gives the same log, byte for byte (times aside).
    replay_session = Session.create(harness.store, cwd=harness.workspace)
    again = harness.agent([], text_tool_calls=True)
    again.session = replay_session
    again.provider = ReplayProvider(recorded)
    run(again.run_turn("read things"))
    assert _comparable(replay_session.events) == _comparable(recorded)


def test_a_reply_the_log_kept_as_text_replays_as_text_whatever_the_recovery_rules(tmp_path):
    """A log recorded with recovery off (or under older rules that refused the reply) kept a
    call-shaped reply as text; replaying it with recovery on must not run it as a call."""
    harness = Harness(tmp_path)
    (harness.workspace / "notes.txt").write_text("one\ntwo\n")
    agent = harness.agent([{"text": FENCED}], text_tool_calls=False)
    run(agent.run_turn("what is in notes.txt?"))
    recorded = list(harness.session.events)
    assert not [e for e in recorded if isinstance(e, ToolCallEvent)]
    replay_session = Session.create(harness.store, cwd=harness.workspace)
    again = harness.agent([], text_tool_calls=True)
    again.session = replay_session
    again.provider = ReplayProvider(recorded)
    result = run(again.run_turn("what is in notes.txt?"))
    assert result.reason == "completed" and result.text == FENCED
    assert _comparable(replay_session.events) == _comparable(recorded)


# ---- a read call written inside prose ---------------------------------------------------------

PROSE_READ = (
    "Let me check the notes.\n"
    '```json\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n```\n'
    "The file says: gamma delta."  # what a small model makes up after its call
)


def test_a_read_call_inside_prose_runs_and_the_made_up_result_after_it_is_not_sent(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.queue(_text_reply(PROSE_READ), openai_text("It says alpha beta."))
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("what is in notes.txt?"))
    assert result.reason == "completed" and result.text == "It says alpha beta."
    first = next(e for e in agent.session.events if isinstance(e, AssistantMessageEvent))
    assert first.data.recovered_from_text == PROSE_READ
    assert first.data.message.text() == "Let me check the notes."
    (answer,) = [e for e in agent.session.events if isinstance(e, ToolResultEvent)]
    assert "alpha beta" in answer.data.message.content[0].content[0].text
    sent = json.dumps(server.bodies[1]["messages"])
    assert "gamma delta" not in sent and "Let me check the notes." in sent


def test_a_command_written_inside_prose_stays_text_and_nothing_runs(tmp_path, server: FakeServer):  # noqa: F811
    reply = (
        "To clean up you could run:\n"
        '```json\n{"name": "bash", "arguments": {"command": "touch owned.txt"}}\n```\n'
        "Shall I?"
    )
    server.queue(_text_reply(reply))
    agent = _local_agent(tmp_path, server.url + "/v1")
    assert run(agent.run_turn("how do I clean up?")).text == reply
    assert not any(isinstance(e, ToolCallEvent) for e in agent.session.events)
    assert not (agent.workspace / "owned.txt").exists()


def test_a_read_call_recovered_from_prose_replays_byte_identically(tmp_path):
    harness = Harness(tmp_path)
    (harness.workspace / "notes.txt").write_text("alpha beta\n")
    agent = harness.agent([{"text": PROSE_READ}, {"text": "done"}], text_tool_calls=True)
    run(agent.run_turn("what is in notes.txt?"))
    recorded = list(harness.session.events)
    assert [e.data.from_text for e in recorded if isinstance(e, ToolCallEvent)] == [True]
    replay_session = Session.create(harness.store, cwd=harness.workspace)
    again = harness.agent([], text_tool_calls=True)
    again.session = replay_session
    again.provider = ReplayProvider(recorded)
    run(again.run_turn("what is in notes.txt?"))
    assert _comparable(replay_session.events) == _comparable(recorded)


def test_a_read_call_from_prose_runs_even_when_the_made_up_text_after_it_was_cut(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    """Qwen2.5-Coder 1.5B wrote its search in a fence, then made up results until the output
    limit cut it: the call's fence had closed, so the cut did not cut the call."""
    cut_reply = PROSE_READ + " It goes on and on about"
    server.queue(
        openai_stream(oa_chunk(content=cut_reply), oa_chunk(finish="length")),
        openai_text("It says alpha beta."),
    )
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("what is in notes.txt?"))
    assert result.reason == "completed" and result.text == "It says alpha beta."
    (answer,) = [e for e in agent.session.events if isinstance(e, ToolResultEvent)]
    assert answer.data.error is None
    assert "alpha beta" in answer.data.message.content[0].content[0].text


def test_a_whole_reply_of_calls_cut_at_the_limit_still_runs_none(tmp_path, server: FakeServer):  # noqa: F811
    server.queue(
        openai_stream(oa_chunk(content=FENCED), oa_chunk(finish="length")),
        openai_text("I will ask again."),
    )
    agent = _local_agent(tmp_path, server.url + "/v1")
    run(agent.run_turn("what is in notes.txt?"))
    (answer,) = [e for e in agent.session.events if isinstance(e, ToolResultEvent)]
    assert answer.data.error is not None and answer.data.error.code == "NOT_RUN"
