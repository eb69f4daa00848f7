"""A whole reply that is a tool call written as text but cannot run — not valid JSON, or naming
a tool that does not exist — used to end the turn ``completed`` with the raw JSON as the answer,
the model never told. Now nothing in it runs, the model is told why in a ``user/message``
(``{reply}-unread``) and the turn goes on; a second such reply in a row ends the turn. The
replies are those Qwen2.5-Coder 0.5B and 1.5B wrote on llama.cpp (audit captures), streamed
token by token through the real HTTP server, through the real agent loop."""

from __future__ import annotations

import json

from dsh.agent.step_outcome import UNREAD_TWICE
from dsh.agent.unread_calls import closest_tools
from dsh.events import (
    AssistantMessageEvent,
    PluginSource,
    ToolCallEvent,
    ToolResultEvent,
    UserMessageEvent,
)
from dsh.llm.replay import ReplayProvider
from dsh.llm.types import TEXT_CALLS_NOTICE
from dsh.surface import Session
from tests.agent.conftest import Harness, run
from tests.agent.test_text_tool_calls import _comparable, _local_agent
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, oa_chunk, openai_stream, openai_text

UNCLOSED = '{"name": "list_dir", "arguments": {"path": "/tmp/audit-llama/ws"}'
"""Qwen2.5-Coder 0.5B, "run ls": the outer ``}`` is missing (``finish_reason: stop``)."""
STRAY_BRACKET = (
    '{"name": "todo_write", "arguments": {"todos": [{"content": "print(\'Add a function to add()'
    " subtracts. Fix it with edit_file so that add returns a + b.'}, "
    '{"status": "completed"}]}]}'
)
"""Qwen2.5-Coder 0.5B after a ``NOT_RUN``: an unclosed string, a stray ``]``."""
DOUBLE_BRACE = (
    '{{"name": "read_file", "arguments": {"path": "notes.txt", "offset": 1, "limit": 1000}}'
)
"""Qwen2.5-Coder 1.5B after a fenced call that ran: one ``{`` too many."""
UNKNOWN_LS = '{"name": "ls", "arguments": {"path": "."}}'
"""Qwen2.5-Coder 0.5B, "run the shell command ls": there is no tool ``ls``."""
TOOLS_LS_GREP = (
    '<tools>\n    {"name": "ls", "arguments": {"path": "."}}\n</tools>\n'
    '<tools>\n    {"name": "grep", "arguments": {"pattern": "*.py", "path": "."}}\n</tools>'
)
"""Qwen2.5-Coder 1.5B, same prompt: ``ls`` beside a grep whose pattern is not a regex."""


def _streamed(text: str):
    """``text`` streamed in pieces of a few characters, as llama.cpp streams tokens."""
    pieces = [oa_chunk(content=text[i : i + 7]) for i in range(0, len(text), 7)]
    return openai_stream(*pieces, oa_chunk(finish="stop"))


def _notices(events) -> list[UserMessageEvent]:
    return [
        e
        for e in events
        if isinstance(e, UserMessageEvent)
        and isinstance(e.data.source, PluginSource)
        and e.data.source.plugin == TEXT_CALLS_NOTICE
    ]


def _told(events) -> str:
    (notice,) = _notices(events)
    reply = next(e for e in events if isinstance(e, AssistantMessageEvent))
    assert notice.data.id == f"{reply.data.message.id}-unread"
    return notice.data.text()


def _called(events) -> list[tuple[str, str | None]]:
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert len(calls) == len(results)
    return [
        (c.data.name, r.data.error.code if r.data.error else None)
        for c, r in zip(calls, results, strict=True)
    ]


def test_a_call_missing_its_closing_brace_is_answered_and_the_turn_goes_on(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    fixed = '{"name": "list_dir", "arguments": {"path": "."}}'
    server.queue(_streamed(UNCLOSED), _streamed(fixed), openai_text("notes.txt is there."))
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("Run ls and tell me the files"))
    assert result.reason == "completed" and result.text == "notes.txt is there."
    events = agent.session.events
    told = _told(events)
    assert "could not be read" in told and "before the JSON is closed" in told
    assert "valid JSON" in told
    sent = json.dumps(server.bodies[1]["messages"])
    assert "could not be read" in sent and UNCLOSED in json.loads(sent)[-2]["content"]
    assert _called(events) == [("list_dir", None)]  # the model's second try ran


def test_a_call_with_a_stray_bracket_is_told_where_its_json_breaks(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.queue(_streamed(STRAY_BRACKET), openai_text("Sorry."))
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("fix add()"))
    assert result.reason == "completed" and result.text == "Sorry."
    told = _told(agent.session.events)
    assert "not valid JSON at character 156" in told and "found 's'" in told
    assert _called(agent.session.events) == []


def test_a_double_braced_call_runs_as_the_call_inside(tmp_path, server: FakeServer):  # noqa: F811
    server.queue(_streamed(DOUBLE_BRACE), openai_text("The build server is alpha."))
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("read notes.txt"))
    assert result.reason == "completed" and result.text == "The build server is alpha."
    assert _called(agent.session.events) == [("read_file", None)]
    assert _notices(agent.session.events) == []


def test_a_call_to_ls_is_answered_with_the_tools_that_do_it(tmp_path, server: FakeServer):  # noqa: F811
    bash_ls = '{"name": "bash", "arguments": {"command": "ls ."}}'
    server.queue(_streamed(UNKNOWN_LS), _streamed(bash_ls), openai_text("notes.txt"))
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("Run the shell command ls"))
    assert result.reason == "completed" and result.text == "notes.txt"
    told = _told(agent.session.events)
    assert "so it was not run: no tool `ls`" in told
    assert 'no tool `ls`: use list_dir or bash, as {"name": "bash", "arguments": ' in told
    assert '{"command": "ls ."}}' in told and "The tools are: bash, edit_file," in told
    assert _called(agent.session.events) == [("bash", None)]


def test_an_unknown_tool_beside_a_known_one_runs_neither_and_is_answered(
    tmp_path,
    server: FakeServer,  # noqa: F811
):
    server.queue(_streamed(TOOLS_LS_GREP), openai_text("I cannot list files."))
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("Run the shell command ls"))
    assert result.reason == "completed"
    told = _told(agent.session.events)
    assert "none of its 2 calls was run: no tool `ls`" in told
    assert _called(agent.session.events) == []  # grep no longer runs with ls dropped unsaid


def test_a_second_unreadable_call_in_a_row_ends_the_turn(tmp_path, server: FakeServer):  # noqa: F811
    server.queue(_streamed(UNCLOSED), _streamed(UNKNOWN_LS), openai_text("never asked"))
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("Run ls"))
    assert result.reason == "error" and result.error == UNREAD_TWICE
    assert len(server.bodies) == 2
    assert len(_notices(agent.session.events)) == 1


def test_a_turn_told_of_an_unreadable_call_replays_byte_identically(tmp_path):
    harness = Harness(tmp_path)
    script = [{"text": UNKNOWN_LS}, {"text": UNCLOSED[:-1] + "}}"}, {"text": "done"}]
    agent = harness.agent(script, text_tool_calls=True)
    run(agent.run_turn("Run ls"))
    recorded = list(harness.session.events)
    assert len(_notices(recorded)) == 1
    replay_session = Session.create(harness.store, cwd=harness.workspace)
    again = harness.agent([], text_tool_calls=True)
    again.session = replay_session
    again.provider = ReplayProvider(recorded)
    run(again.run_turn("Run ls"))
    assert _comparable(replay_session.events) == _comparable(recorded)


def test_the_tools_closest_to_an_unknown_name():
    tools = ["read_file", "write_file", "list_dir", "glob", "grep", "bash"]
    assert closest_tools("ls", tools) == ["list_dir"]
    assert closest_tools("cat", tools) == ["read_file"]
    assert closest_tools("find", tools) == ["glob"]
    assert closest_tools("read", tools) == ["read_file"]
    assert closest_tools("write", tools) == ["write_file"]
    assert closest_tools("frobnicate", tools) == []
    assert closest_tools("ls", ["bash"]) == []  # a tool that is not there is not offered


def test_broken_json_that_is_not_a_call_stays_the_answer(tmp_path, server: FakeServer):  # noqa: F811
    """Asked for JSON, a model may get it wrong: with no ``arguments`` key it is no call."""
    answer = '{"name": "John", "age": }'
    server.queue(_streamed(answer))
    agent = _local_agent(tmp_path, server.url + "/v1")
    result = run(agent.run_turn("give me a person as JSON"))
    assert result.reason == "completed" and result.text == answer
    assert _notices(agent.session.events) == []
