"""A model repeating one read-only tool call in a turn (``dsh.agent.repeated_calls``): each
repeat that gets the same result is told so in its logged result, a call that may change
something forgets what was read, and the turn stops at ``tools.max_repeated_calls``."""

from __future__ import annotations

from typing import Any

from dsh.agent import rebuild_requests
from dsh.compaction.pruner import prune_result
from dsh.events import StepEndEvent, ToolResultEvent, TurnEndEvent, encode_json
from tests.agent.conftest import Harness, run

NOTE = (
    "[Same call and same result as earlier in this turn: you have now got this result {} times;"
    " nothing changed — use that result instead of calling again.]"
)


def read(path: str = "a.txt", **more: Any) -> dict[str, Any]:
    return {"name": "read_file", "arguments": {"path": path, **more}}


def reply(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"toolCalls": list(calls)}


def texts(harness: Harness) -> list[str]:
    """Each logged tool result's text, in log order."""
    return [
        e.data.message.content[0].content[0].text  # type: ignore[union-attr]
        for e in harness.session.events
        if isinstance(e, ToolResultEvent)
    ]


def noted(text: str) -> bool:
    return "[Same call and same result as earlier in this turn" in text


def test_an_identical_read_repeated_in_the_turn_is_told_it_changed_nothing(harness: Harness):
    (harness.workspace / "a.txt").write_text("hello\n")
    # the same arguments written in another key order are the same call
    again = {"name": "read_file", "arguments": '{"limit": 10,  "path": "a.txt"}'}
    script = [reply(read(limit=10)), reply(again), {"text": "It says hello."}]
    result = run(harness.agent(script).run_turn("what is in a.txt?"))
    assert result.reason == "completed"
    first, second = texts(harness)
    assert not noted(first) and "1\thello" in first
    assert second.startswith(first) and second.splitlines()[-1] == NOTE.format(2)
    assert second.count("\n") == first.count("\n") + (0 if first.endswith("\n") else 1)
    # the note is in the log: a reopened session reads it back
    reopened = [e for e in harness.reopen().events if isinstance(e, ToolResultEvent)]
    assert reopened[1].data.message.content[0].content[0].text == second  # type: ignore[union-attr]


def test_two_identical_reads_in_one_reply_note_the_second(harness: Harness):
    (harness.workspace / "a.txt").write_text("hello\n")
    script = [reply(read(), read(), read("b.txt")), {"text": "done"}]
    (harness.workspace / "b.txt").write_text("other\n")
    run(harness.agent(script).run_turn("go"))
    assert [noted(t) for t in texts(harness)] == [False, True, False]
    assert NOTE.format(2) in texts(harness)[1]


def test_no_note_when_the_arguments_differ(harness: Harness):
    (harness.workspace / "a.txt").write_text("hello\n")
    script = [
        reply(read()),
        reply(read(offset=1)),
        reply(read(limit=5)),
        reply(read(limit=5)),  # the only repeat
        {"text": "done"},
    ]
    run(harness.agent(script).run_turn("go"))
    assert [noted(t) for t in texts(harness)] == [False, False, False, True]
    assert NOTE.format(2) in texts(harness)[3]


def test_no_note_when_the_result_differs_and_the_next_repeat_counts_from_the_new_one(
    harness: Harness,
):
    """The file changes between two reads (not by a call of this turn): the second read is
    not a repeat, and a third identical one counts from the second (twice, not three times)."""
    path = harness.workspace / "a.txt"
    path.write_text("before\n")
    agent = harness.agent([reply(read()), reply(read()), reply(read()), {"text": "done"}])

    async def change_the_file(agent_: Any, turn: int) -> None:
        if path.read_text() == "before\n" and any(texts(harness)):
            path.write_text("after\n")

    agent.pre_step_hooks.append(change_the_file)
    run(agent.run_turn("go"))
    first, second, third = texts(harness)
    assert "before" in first and "after" in second and not noted(second)
    assert noted(third) and NOTE.format(2) in third


def test_a_write_or_a_command_between_two_identical_reads_forgets_the_first(harness: Harness):
    (harness.workspace / "a.txt").write_text("hello\n")
    write = {"name": "write_file", "arguments": {"path": "b.txt", "content": "x\n"}}
    command = {"name": "bash", "arguments": {"command": "true"}}
    script = [
        reply(read()),
        reply(write),  # another file: nothing the read saw changed, but a write resets
        reply(read()),
        reply(read(), command, read()),  # in one reply, in call order
        reply(read()),  # after the last read of the reply above: a repeat again
        {"text": "done"},
    ]
    run(harness.agent(script).run_turn("go"))
    reads = [t for t in texts(harness) if "1\thello" in t]
    assert [noted(t) for t in reads] == [False, False, True, False, True]
    assert NOTE.format(2) in reads[2] and NOTE.format(2) in reads[4]


def test_an_identical_read_in_the_next_turn_is_not_a_repeat(harness: Harness):
    (harness.workspace / "a.txt").write_text("hello\n")
    script = [reply(read()), {"text": "one"}, reply(read()), reply(read()), {"text": "two"}]
    agent = harness.agent(script)
    run(agent.run_turn("first"))
    run(agent.run_turn("second"))
    assert [noted(t) for t in texts(harness)] == [False, False, True]
    assert NOTE.format(2) in texts(harness)[2]  # the second turn counts afresh


def test_the_turn_stops_when_one_read_got_the_same_result_the_limit_times(harness: Harness):
    (harness.workspace / "a.txt").write_text("hello\n")
    script = [reply(read()), reply(read(), read()), reply(read()), {"text": "never"}]
    agent = harness.agent(script, max_repeated_calls=3)
    result = run(agent.run_turn("go"))
    assert result.reason == "repeated-calls"  # a limit of its own, not a cancel's "aborted"
    assert result.error == (
        'the model called read_file {"path":"a.txt"} 3 times in this turn and got the same '
        "result each time (tools.max_repeated_calls = 3)"
    )
    assert "\n" not in result.error
    # the step that reached the limit is whole: both its results logged, then step and turn end
    assert [noted(t) for t in texts(harness)] == [False, True, True]
    assert [t.splitlines()[-1] for t in texts(harness)[1:]] == [NOTE.format(2), NOTE.format(3)]
    assert harness.types()[-4:] == ["tool/result", "tool/result", "step/end", "turn/end"]
    end = harness.session.events[-1]
    assert isinstance(end, TurnEndEvent) and end.data.reason.error == result.error
    assert len(harness.session.of_type(StepEndEvent)) == 2
    assert harness.session.tool_pairing_balanced_after(harness.session.nodes[-1])
    # the next turn runs as usual, and counts afresh
    result = run(agent.run_turn("again"))
    assert (result.reason, result.text) == ("completed", "never")
    assert [noted(t) for t in texts(harness)] == [False, True, True, False]
    assert len(harness.reopen().events) == len(harness.session.events)


def test_a_limit_of_zero_never_stops_the_turn(harness: Harness):
    (harness.workspace / "a.txt").write_text("hello\n")
    script = [reply(read()) for _ in range(6)] + [{"text": "done"}]
    result = run(harness.agent(script, max_repeated_calls=0).run_turn("go"))
    assert result.reason == "completed"
    assert [noted(t) for t in texts(harness)] == [False] + [True] * 5
    assert [t.splitlines()[-1] for t in texts(harness)[1:]] == [NOTE.format(n) for n in range(2, 7)]


def test_the_same_failing_read_is_a_repeat_too(harness: Harness):
    script = [reply(read("missing.txt")), reply(read("missing.txt")), {"text": "done"}]
    run(harness.agent(script).run_turn("go"))
    results = harness.session.of_type(ToolResultEvent)
    assert [r.data.error.code for r in results] == ["NOT_FOUND", "NOT_FOUND"]  # type: ignore[union-attr]
    assert [noted(t) for t in texts(harness)] == [False, True]


def test_requests_rebuilt_from_the_log_equal_what_was_sent_with_the_notes(harness: Harness):
    (harness.workspace / "a.txt").write_text("hello\n")
    script = [reply(read()), reply(read(), read()), reply(read()), {"text": "never"}]
    run(harness.agent(script, max_repeated_calls=4).run_turn("go"))
    rebuilt = [request for _, request in rebuild_requests(harness.session.events)]
    sent = harness.provider.requests
    assert len(sent) == len(rebuilt) == 3
    assert any(noted(encode_json(r.messages).decode()) for r in sent)
    for real, again in zip(sent, rebuilt, strict=True):
        assert encode_json(real.messages) == encode_json(again.messages)
    reopened = harness.reopen().events
    assert [r for _, r in rebuild_requests(reopened)] == rebuilt


def test_a_result_the_model_no_longer_sees_is_not_counted(harness: Harness):
    """The pruner replaced the first read's result on the surface before the next step: the
    same result again is the one the model sees, not a repeat; a third read counts from it."""
    (harness.workspace / "a.txt").write_text("a long line of the file\n" * 200)
    agent = harness.agent([reply(read()), reply(read()), reply(read()), {"text": "done"}])

    async def prune_the_first_result(agent_: Any, turn: int) -> None:
        results = harness.session.of_type(ToolResultEvent)
        if len(results) == 1:
            prune_result(harness.session, results[0].seq, head=100, tail=100)

    agent.pre_step_hooks.append(prune_the_first_result)
    run(agent.run_turn("go"))
    logged = [t for t in texts(harness) if "pruned from this tool result" not in t]
    assert [noted(t) for t in logged] == [False, False, True]
    assert NOTE.format(2) in logged[2]


def test_arguments_that_are_not_json_are_quoted_on_the_stop_line(harness: Harness):
    broken = {"name": "read_file", "arguments": '{\n "path": '}  # cut mid-object
    result = run(harness.agent([reply(broken)] * 3, max_repeated_calls=2).run_turn("go"))
    assert result.reason == "repeated-calls" and "\n" not in (result.error or "")
    assert result.error is not None
    assert result.error.startswith('the model called read_file "{\\n \\"path\\": " 2 times')
    assert [noted(t) for t in texts(harness)] == [False, True]
