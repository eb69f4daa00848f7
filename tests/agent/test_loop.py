"""The turn/step loop with the scripted provider and real tools (docs/architecture.md, "The
session log" and "Requests are a function of the log")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from dsh.agent import rebuild_requests, tool_calls
from dsh.events import (
    AssistantMessageEvent,
    RequestErrorEvent,
    RequestHeaderEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    encode_json,
)
from dsh.llm.types import TextDelta
from tests.agent.conftest import Harness, run

TOOL_TURN = [
    {"text": "Reading it.", "toolCalls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
    {"text": "It says hello."},
]


def test_a_tool_using_turn_is_logged_in_spec_write_order(harness: Harness):
    (harness.workspace / "a.txt").write_text("hello\n")
    result = run(harness.agent(TOOL_TURN).run_turn("what is in a.txt?"))
    assert result.reason == "completed" and result.text == "It says hello."
    assert harness.types() == [
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        "request/context",
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    result_event = next(e for e in harness.session.events if isinstance(e, ToolResultEvent))
    call_event = next(e for e in harness.session.events if isinstance(e, ToolCallEvent))
    assert result_event.source_event_seqs == (call_event.seq,)
    assert "1\thello" in result_event.data.message.content[0].content[0].text


def test_header_is_logged_only_when_it_changes_and_context_only_on_route_change(harness):
    agent = harness.agent([{"text": "one"}, {"text": "two"}])
    run(agent.run_turn("first"))
    run(agent.run_turn("second"))
    assert harness.types().count("request/header") == 1
    assert harness.types().count("request/context") == 1


def test_a_replys_calls_run_in_its_order_and_results_keep_call_order(harness: Harness):
    """A command then a read of what it writes: the read waits for the command (both used to
    start at once, and the read saw the file as it was before)."""
    script = [
        {
            "toolCalls": [
                {"name": "read_file", "arguments": {"path": "b.txt"}},
                {"name": "bash", "arguments": {"command": "sleep 0.3; echo new > b.txt"}},
                {"name": "read_file", "arguments": {"path": "b.txt"}},
            ]
        },
        {"text": "done"},
    ]
    (harness.workspace / "b.txt").write_text("old\n")
    run(harness.agent(script).run_turn("go"))
    events = harness.session.events
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [c.data.name for c in calls] == ["read_file", "bash", "read_file"]
    assert max(c.seq for c in calls) < min(r.seq for r in results)
    assert [r.source_event_seqs for r in results] == [(c.seq,) for c in calls]
    texts = [r.data.message.content[0].content[0].text for r in results]
    assert "old" in texts[0] and "new" not in texts[0]
    assert "new" in texts[2]


def test_every_request_is_rebuilt_byte_equal_from_the_log_prefix(harness: Harness):
    (harness.workspace / "a.txt").write_text("hello\n")
    agent = harness.agent([*TOOL_TURN, {"text": "bye"}])
    run(agent.run_turn("what is in a.txt?"))
    run(agent.run_turn("thanks"))
    rebuilt = [request for _, request in rebuild_requests(harness.session.events)]
    sent = harness.provider.requests
    assert len(sent) == len(rebuilt) == 3
    for real, again in zip(sent, rebuilt, strict=True):
        assert encode_json(real.messages) == encode_json(again.messages)
        assert real.system == again.system
        assert encode_json(real.tools) == encode_json(again.tools)


async def until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``condition`` until it holds (the deadline only stops a broken test hanging)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never saw {what}")
        await asyncio.sleep(0.01)


def test_cancelling_mid_stream_keeps_the_prefix_and_closes_the_turn(harness: Harness):
    # The first piece streams at once and the next one an hour later: the cancel lands after
    # the first delta has arrived, whatever the machine's load.
    script = [{"text": "partial answer " * 4, "chunkDelayMs": 3_600_000}]
    agent = harness.agent(script, chunk_size=8)

    async def scenario():
        streamed = asyncio.Event()
        agent.on_stream = lambda event: streamed.set() if isinstance(event, TextDelta) else None
        task = asyncio.create_task(agent.run_turn("long task"))
        await asyncio.wait_for(streamed.wait(), 30)
        agent.cancel()
        return await asyncio.wait_for(task, 30)

    result = run(scenario())
    assert result.reason == "aborted" and result.text == "partial "
    assistant = [e for e in harness.session.events if isinstance(e, AssistantMessageEvent)]
    assert len(assistant) == 1 and assistant[0].data.interrupted
    assert assistant[0].data.message.text() == "partial "  # the streamed prefix, kept
    end = harness.session.events[-1]
    assert isinstance(end, TurnEndEvent) and end.data.reason.kind == "aborted"
    reopened = harness.reopen()
    assert len(reopened.events) == len(harness.session.events)
    (kept,) = [e for e in reopened.events if isinstance(e, AssistantMessageEvent)]
    assert kept.data.interrupted and kept.data.message.text() == "partial "


def test_cancelling_a_running_tool_answers_every_call_so_pairing_stays_balanced(harness):
    started = harness.workspace / "started"
    command = "touch started && sleep 30"
    agent = harness.agent([{"toolCalls": [{"name": "bash", "arguments": {"command": command}}]}])

    async def scenario():
        task = asyncio.create_task(agent.run_turn("run it"))
        await until(started.exists, "the command start")  # the tool is running now
        agent.cancel()
        return await asyncio.wait_for(task, 30)

    result = run(scenario())
    assert result.reason == "aborted"
    results = [e for e in harness.session.events if isinstance(e, ToolResultEvent)]
    assert len(results) == 1 and results[0].data.error.code == "CANCELLED"
    last_assistant = [e for e in harness.session.events if isinstance(e, AssistantMessageEvent)][-1]
    assert not last_assistant.data.interrupted  # the reply was whole: the tool was cancelled
    assert harness.session.tool_pairing_balanced_after(results[0].seq)
    assert last_assistant.seq < results[0].seq


def test_a_non_retryable_error_ends_the_turn_and_the_session_stays_loadable(harness):
    script = [{"error": {"code": "AUTH", "message": "bad key"}}]
    result = run(harness.agent(script).run_turn("hi"))
    assert result.reason == "error" and "AUTH" in (result.error or "")
    errors = [e for e in harness.session.events if isinstance(e, RequestErrorEvent)]
    assert [(e.data.code, e.data.retryable) for e in errors] == [("AUTH", False)]
    assert harness.types()[-2:] == ["step/end", "turn/end"]
    assert len(harness.reopen().events) == len(harness.session.events)


def test_context_overflow_surfaces_as_its_own_code(harness: Harness):
    script = [{"error": {"code": "CONTEXT_WINDOW_EXCEEDED", "message": "too long"}}]
    result = run(harness.agent(script).run_turn("hi"))
    assert result.reason == "error"
    error = next(e for e in harness.session.events if isinstance(e, RequestErrorEvent))
    assert error.data.code == "CONTEXT_WINDOW_EXCEEDED" and not error.data.retryable


def test_an_overflow_handler_that_changes_nothing_ends_the_turn_after_one_try(harness):
    script = [{"error": {"code": "CONTEXT_WINDOW_EXCEEDED", "message": "too long"}}]
    agent = harness.agent(script)
    calls = []

    async def handler(agent_, turn, step):
        calls.append((turn, step))
        return False

    agent.overflow_handler = handler
    result = run(agent.run_turn("hi"))
    assert result.reason == "error" and calls == [(1, 1)]


def test_max_steps_stops_a_model_that_keeps_calling_tools(harness: Harness):
    loop_forever = {"toolCalls": [{"name": "list_dir", "arguments": {}}]}
    result = run(harness.agent([loop_forever] * 5, max_steps=3).run_turn("go"))
    assert result.reason == "max-steps" and "max_steps" in (result.error or "")
    assert harness.types().count("step/start") == 3
    assert harness.session.tool_pairing_balanced_after(harness.session.nodes[-1])


def test_malformed_tool_arguments_become_an_error_result_not_a_crash(harness: Harness):
    script = [
        {"toolCalls": [{"name": "read_file", "arguments": "{not json"}]},
        {"text": "sorry"},
    ]
    result = run(harness.agent(script).run_turn("go"))
    assert result.reason == "completed"
    tool_result = next(e for e in harness.session.events if isinstance(e, ToolResultEvent))
    assert tool_result.data.message.content[0].is_error
    assert tool_result.data.error.code == "INVALID_ARGUMENT"


def test_headless_ask_policy_denies_shell_with_an_actionable_message(harness: Harness):
    script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": "ok"},
    ]
    run(harness.agent(script, policy="ask").run_turn("go"))
    tool_result = next(e for e in harness.session.events if isinstance(e, ToolResultEvent))
    assert tool_result.data.error.code == "DENIED"
    assert "--allow" in tool_result.data.message.content[0].content[0].text


def test_todo_write_logs_a_todo_event_after_its_result(harness: Harness):
    todos = {"todos": [{"content": "write tests", "status": "pending"}]}
    script = [{"toolCalls": [{"name": "todo_write", "arguments": todos}]}, {"text": "planned"}]
    run(harness.agent(script).run_turn("plan"))
    types = harness.types()
    assert types.index("todo/write") == types.index("tool/result") + 1


def test_usage_with_cache_reads_is_logged_on_the_assistant_message(harness: Harness):
    agent = harness.agent([{"text": "one"}, {"text": "two"}])
    run(agent.run_turn("first"))
    run(agent.run_turn("second"))
    usages = [e.data.usage for e in harness.session.events if isinstance(e, AssistantMessageEvent)]
    assert all(u is not None for u in usages)
    assert usages[1].cache_read_tokens and usages[1].cache_read_tokens > 0


def test_system_prompt_includes_agents_md(harness: Harness):
    (harness.workspace / "AGENTS.md").write_text("Always run make check.")
    run(harness.agent([{"text": "ok"}]).run_turn("hi"))
    header = next(e for e in harness.session.events if isinstance(e, RequestHeaderEvent))
    assert "Always run make check." in header.data.header.system


def test_a_failing_pre_step_hook_does_not_break_the_turn(harness: Harness):
    agent = harness.agent([{"text": "still answered"}])

    async def broken(agent_, turn):
        raise RuntimeError("hook exploded")

    agent.pre_step_hooks.append(broken)
    result = run(agent.run_turn("hi"))
    assert result.reason == "completed" and result.text == "still answered"


def test_a_turn_cancelled_during_its_pre_step_compaction_still_logs_the_prompt(harness: Harness):
    """Esc while the pre-step compaction runs (or a closed pipe under ``dsh run --json``) ended
    the turn before its first step, and the prompt was in no event: it is logged in a step of
    its own, and the next turn's request carries it."""
    agent = harness.agent([{"text": "answered the second"}])

    async def compacting(agent_, turn):
        if turn == 1:
            agent_.cancel()
            await asyncio.Event().wait()  # a long summariser call, cancelled

    agent.pre_step_hooks.append(compacting)
    result = run(agent.run_turn("keep this question"))
    assert result.reason == "aborted"
    assert harness.types() == ["turn/start", "step/start", "user/message", "step/end", "turn/end"]
    run(agent.run_turn("and this one"))
    ((_, request),) = rebuild_requests(harness.session.events)
    texts = [m.text() for m in request.messages if m.role == "user"]
    assert texts == ["keep this question", "and this one"]


def test_cancelling_during_overflow_recovery_stops_it_and_ends_the_turn_aborted(harness):
    """Esc while the overflow handler compacts (a long summariser call) stops that compaction
    and ends the turn at once, as it does during the pre-step compaction."""
    script = [{"error": {"code": "CONTEXT_WINDOW_EXCEEDED", "message": "too long"}}]
    agent = harness.agent(script)
    stopped = []

    async def compacting(agent_, turn, step):
        agent_.cancel()
        try:
            await asyncio.Event().wait()  # a long summariser call
        except asyncio.CancelledError:
            stopped.append(True)
            raise
        return True

    agent.overflow_handler = compacting
    result = run(asyncio.wait_for(agent.run_turn("hi"), 10))
    assert result.reason == "aborted" and stopped == [True]
    assert harness.types()[-3:] == ["request/error", "step/end", "turn/end"]
    assert len(harness.reopen().events) == len(harness.session.events)


def test_an_overflow_handler_that_fails_ends_the_turn_with_the_overflow_error(harness):
    """A compaction that breaks during overflow recovery (like a failing pre-step hook) does not
    take the turn down with it: the turn ends as the overflow error, its step and turn closed."""
    script = [{"error": {"code": "CONTEXT_WINDOW_EXCEEDED", "message": "too long"}}]
    agent = harness.agent(script)

    async def broken(agent_, turn, step):
        raise RuntimeError("compaction exploded")

    agent.overflow_handler = broken
    result = run(agent.run_turn("hi"))
    assert result.reason == "error" and "CONTEXT_WINDOW_EXCEEDED" in (result.error or "")
    assert harness.types()[-3:] == ["request/error", "step/end", "turn/end"]


def test_a_turn_that_fails_unexpectedly_is_closed_so_the_next_turn_sends_a_valid_request(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
):
    """An exception between a turn's events (here the tool result cannot be logged) still
    answers the open tool call and ends the step and the turn as an error before it reaches the
    face, so the next turn in the same process does not send a tool call without its result."""
    script = [
        {"toolCalls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"text": "answered"},
    ]
    (harness.workspace / "a.txt").write_text("hello\n")
    agent = harness.agent(script)

    def broken(*args, **kwargs):
        raise RuntimeError("a bug while logging the result")

    monkeypatch.setattr(tool_calls, "log_tool_result", broken)
    try:
        run(agent.run_turn("read it"))
    except RuntimeError:
        pass
    else:
        raise AssertionError("the failure reaches the caller")
    assert harness.types()[-4:] == ["tool/call", "tool/result", "step/end", "turn/end"]
    end = harness.session.events[-1]
    assert isinstance(end, TurnEndEvent) and end.data.reason.kind == "error"
    assert "a bug while logging the result" in (end.data.reason.error or "")
    monkeypatch.undo()
    result = run(agent.run_turn("again"))
    assert result.reason == "completed"
    request = harness.provider.requests[-1]
    tool_messages = [m for m in request.messages if m.role == "tool"]
    assert len(tool_messages) == 1
