"""The tool calls a small model wrote inside prose that are not run are named on its reply
(``assistant/message``'s ``textCallsNotRun``), never run, and the turn takes no extra step for
them; when the turn goes on anyway (a read from the same reply ran), the model is told after
that call's result, unless that was the last step ``max_steps`` allows. A replay reproduces
the log byte for byte, an older log (which named none) included. The real loop with the
keyless scripted provider."""

from __future__ import annotations

import json

import msgspec

from dsh.agent import rebuild_requests
from dsh.agent.text_replies import TEXT_CALLS_NOTICE
from dsh.events import (
    AssistantMessageEvent,
    Event,
    PluginSource,
    ToolCallEvent,
    ToolResultEvent,
    UserMessageEvent,
    decode_event_line,
    encode_event,
)
from dsh.llm.replay import ReplayProvider
from dsh.surface import Session
from dsh.transcript import not_run_note, render_human_transcript, render_markdown
from tests.agent.conftest import Harness, run
from tests.agent.test_text_tool_calls import _comparable, _Recording

EDIT = json.dumps(
    {"name": "edit_file", "arguments": {"path": "app.py", "old": "bug", "new": "fix"}}
)
READ = json.dumps({"name": "read_file", "arguments": {"path": "app.py"}})
CLAIM = f"I will fix it.\n<tools>{EDIT}</tools>\nThe tests passed: the bug is fixed."
"""What Qwen2.5-Coder 1.5B answered: a write inside prose, then a made-up success."""


def replies(harness: Harness) -> list[AssistantMessageEvent]:
    return [e for e in harness.session.events if isinstance(e, AssistantMessageEvent)]


def notices(harness: Harness) -> list[UserMessageEvent]:
    return [
        e
        for e in harness.session.events
        if isinstance(e, UserMessageEvent)
        and isinstance(e.data.source, PluginSource)
        and e.data.source.plugin == TEXT_CALLS_NOTICE
    ]


def agent_for(harness: Harness, texts: list[str], **config: object) -> _Recording:
    (harness.workspace / "app.py").write_text("bug\n")
    agent = harness.agent([{"text": t} for t in texts], **{"text_tool_calls": True, **config})
    recording = _Recording(agent.provider)
    agent.provider = recording
    harness.ran = agent  # type: ignore[attr-defined]
    return recording


def test_a_write_inside_a_final_reply_is_named_not_run_and_takes_no_step(
    harness: Harness,
) -> None:
    recording = agent_for(harness, [CLAIM])
    result = run(harness.ran.run_turn("fix the bug"))  # type: ignore[attr-defined]
    assert result.reason == "completed" and result.text == CLAIM  # the answer as it was
    assert (harness.workspace / "app.py").read_text() == "bug\n"  # nothing ran
    assert not any(isinstance(e, ToolCallEvent | ToolResultEvent) for e in harness.session.events)
    (reply,) = replies(harness)
    assert reply.data.text_calls_not_run == ("edit_file",)
    assert b'"textCallsNotRun":["edit_file"]' in encode_event(reply)
    assert len(recording.requests) == 1 and notices(harness) == []  # the turn ended as before
    note = not_run_note(["edit_file"])
    assert f"The tests passed: the bug is fixed.\n({note})" in render_human_transcript(
        harness.session.events
    )
    markdown = render_markdown(harness.session.header, harness.session.events)
    assert f"The tests passed: the bug is fixed.\n\n*{note}*" in markdown


def test_a_reply_without_calls_in_its_text_is_logged_as_before(harness: Harness) -> None:
    recording = agent_for(harness, ["The bug is in app.py; change `bug` to `fix`."])
    run(harness.ran.run_turn("where is the bug?"))  # type: ignore[attr-defined]
    (reply,) = replies(harness)
    assert reply.data.text_calls_not_run == () and b"textCallsNotRun" not in encode_event(reply)
    assert len(recording.requests) == 1 and notices(harness) == []


def test_a_reply_that_called_a_tool_itself_is_not_searched(harness: Harness) -> None:
    """Its text beside a call of the API's own may show an example: it names nothing."""
    (harness.workspace / "app.py").write_text("bug\n")
    call = {"name": "read_file", "arguments": {"path": "app.py"}}
    script = [{"text": CLAIM, "toolCalls": [call]}, {"text": "done"}]
    agent = harness.agent(script, text_tool_calls=True)
    run(agent.run_turn("fix the bug"))
    assert [r.data.text_calls_not_run for r in replies(harness)] == [(), ()]
    assert notices(harness) == []


def test_a_route_that_reads_no_calls_in_text_names_none(harness: Harness) -> None:
    agent_for(harness, [CLAIM], text_tool_calls=False)
    run(harness.ran.run_turn("fix the bug"))  # type: ignore[attr-defined]
    assert replies(harness)[0].data.text_calls_not_run == ()


def test_when_the_turn_goes_on_the_model_is_told_after_the_read_that_ran(
    harness: Harness,
) -> None:
    """The read in the reply's first fence runs; the edit after it (in the text dropped from the
    message) does not, and the model reads why in the next request: no step is added, the
    turn went on for the read."""
    first = f"Let me look.\n```json\n{READ}\n```\nNow the fix:\n```json\n{EDIT}\n```\nDone!"
    recording = agent_for(harness, [first, "It reads `bug`; I will edit it properly."])
    result = run(harness.ran.run_turn("fix the bug"))  # type: ignore[attr-defined]
    assert result.reason == "completed" and len(recording.requests) == 2
    assert (harness.workspace / "app.py").read_text() == "bug\n"
    calls = [e.data.name for e in harness.session.events if isinstance(e, ToolCallEvent)]
    assert calls == ["read_file"]
    assert [r.data.text_calls_not_run for r in replies(harness)] == [("edit_file",), ()]
    (notice,) = notices(harness)
    types = [type(e).__name__ for e in harness.session.events if e.seq < notice.seq]
    assert types[-1] == "ToolResultEvent"  # after the read's result, before the next step
    text = notice.data.text()
    assert text.startswith("[NOT_RUN] Your reply also wrote 1 tool call as text (edit_file)")
    sent = json.dumps(msgspec.to_builtins(recording.requests[1].messages))
    assert "Your reply also wrote 1 tool call as text (edit_file)" in sent
    rebuilt = [request for _, request in rebuild_requests(harness.session.events)]
    assert [msgspec.json.encode(r.messages) for r in rebuilt] == [
        msgspec.json.encode(r.messages) for r in recording.requests
    ]  # every request is still a function of the log


def test_after_the_last_step_max_steps_allows_no_note_is_logged_that_no_call_would_read(
    harness: Harness,
) -> None:
    """The same reply on the turn's last step (``max_steps=1``): the read runs, the turn ends
    there, and no note for the model is logged, since no model call follows to read it (the
    reply still names the edit: every face says it was not run)."""
    first = f"Let me look.\n```json\n{READ}\n```\nNow the fix:\n```json\n{EDIT}\n```\nDone!"
    recording = agent_for(harness, [first, "never asked"], max_steps=1)
    result = run(harness.ran.run_turn("fix the bug"))  # type: ignore[attr-defined]
    assert result.reason == "max-steps" and result.error == "stopped after 1 steps (max_steps)"
    assert len(recording.requests) == 1
    assert [r.data.text_calls_not_run for r in replies(harness)] == [("edit_file",)]
    assert notices(harness) == []
    types = [type(e).__name__ for e in harness.session.events]
    assert types[-3:] == ["ToolResultEvent", "StepEndEvent", "TurnEndEvent"]


def replayed(harness: Harness, recorded: list[Event], prompt: str) -> list[Event]:
    session = Session.create(harness.store, cwd=harness.workspace)
    again = harness.agent([], text_tool_calls=True)
    again.session = session
    again.provider = ReplayProvider(recorded)
    run(again.run_turn(prompt))
    return list(session.events)


def test_a_replay_logs_the_same_names_and_notice_byte_for_byte(harness: Harness) -> None:
    first = f"Let me look.\n```json\n{READ}\n```\nNow the fix:\n```json\n{EDIT}\n```\nDone!"
    agent_for(harness, [first, CLAIM])
    run(harness.ran.run_turn("fix the bug"))  # type: ignore[attr-defined]
    recorded = list(harness.session.events)
    assert len(notices(harness)) == 1
    assert _comparable(replayed(harness, recorded, "fix the bug")) == _comparable(recorded)


def test_an_older_log_that_named_none_replays_as_it_ran_and_still_loads(
    harness: Harness,
) -> None:
    """A log written before the calls were named: its replies carry no ``textCallsNotRun`` and
    no notice follows; it decodes, and its replay adds neither."""
    first = f"Let me look.\n```json\n{READ}\n```\nNow the fix:\n```json\n{EDIT}\n```\nDone!"
    agent_for(harness, [first, CLAIM])
    run(harness.ran.run_turn("fix the bug"))  # type: ignore[attr-defined]
    older: list[Event] = []
    for event in harness.session.events:
        if event in notices(harness):
            continue
        raw = msgspec.json.decode(encode_event(event))
        raw["data"].pop("textCallsNotRun", None)
        raw["seq"] = len(older)
        older.append(decode_event_line(msgspec.json.encode(raw), line=len(older) + 1))
    assert all(
        e.data.text_calls_not_run == () for e in older if isinstance(e, AssistantMessageEvent)
    )
    again = replayed(harness, older, "fix the bug")
    assert _comparable(again) == _comparable(older)


def test_the_note_people_read_names_the_calls() -> None:
    assert not_run_note(["edit_file"]) == (
        "1 tool call written in the reply's text was not run (edit_file): the model wrote it "
        "as text instead of calling the tool"
    )
    assert not_run_note(["edit_file", "bash", "edit_file"]).startswith(
        "3 tool calls written in the reply's text were not run (edit_file, bash): the model "
        "wrote them"
    )
