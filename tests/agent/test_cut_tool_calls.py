"""A reply cut at the output-token limit (``max-tokens``) that carries tool calls: the calls'
arguments may have been cut mid-stream, so none of them runs. Each gets a ``NOT_RUN`` result
telling the model to issue it again; the turn goes on, and a second cut reply with tool calls
in a row ends the turn ``max-tokens`` with an error naming the option that raises the limit."""

from __future__ import annotations

import json
from typing import Any

from dsh.agent import rebuild_requests
from dsh.events import ToolCallEvent, TurnEndEvent, encode_json
from dsh.llm.replay import ReplayProvider
from dsh.llm.types import CUT_REPLY
from dsh.surface import Session
from dsh.transcript import NoteItem, transcript_items
from tests.agent.canned import assert_pairs_on_the_wire, of_type, results
from tests.agent.conftest import Harness, run
from tests.agent.test_stream_failures import _comparable


def _touch(name: str, **entry: Any) -> dict[str, Any]:
    """A scripted reply that calls bash to create ``name`` in the workspace."""
    return {"toolCalls": [{"name": "bash", "arguments": {"command": f"touch {name}"}}], **entry}


def _cut(name: str) -> dict[str, Any]:
    return _touch(name, text=f"Creating {name}.", finish="max-tokens")


def _requests_match_the_log(harness: Harness) -> None:
    rebuilt = [request for _, request in rebuild_requests(harness.session.events)]
    assert [encode_json(r.messages) for r in rebuilt] == [
        encode_json(r.messages) for r in harness.provider.requests
    ]


def test_cut_tool_calls_are_not_run_and_the_turn_goes_on(harness: Harness):
    agent = harness.agent([_cut("cut"), _touch("retried"), {"text": "Done."}])
    result = run(agent.run_turn("make the files"))
    assert result.reason == "completed" and result.text == "Done."
    assert not (harness.workspace / "cut").exists()  # the cut call never ran
    assert (harness.workspace / "retried").exists()  # the model's retry did
    (cut, retried) = results(harness.session)
    assert cut[0] == "call_0_0" and cut[1] == "NOT_RUN"
    assert CUT_REPLY in cut[2] and "again" in cut[2] and "not run" in cut[2]
    assert retried[0] == "call_1_0" and retried[1] is None
    second_request = harness.provider.requests[1]
    assert_pairs_on_the_wire(second_request)
    assert CUT_REPLY in encode_json(second_request.messages).decode()
    _requests_match_the_log(harness)
    assert len(harness.reopen().events) == len(harness.session.events)


def test_two_cut_replies_in_a_row_end_the_turn_max_tokens(harness: Harness):
    script = [_cut("first"), _cut("second"), {"text": "never asked"}]
    agent = harness.agent(script, params={"max_tokens": 512})
    result = run(agent.run_turn("make the files"))
    assert result.reason == "max-tokens"
    assert result.error is not None
    assert "provider.max_output_tokens" in result.error and "512 tokens" in result.error
    assert not (harness.workspace / "first").exists()
    assert not (harness.workspace / "second").exists()
    assert [(r[0], r[1]) for r in results(harness.session)] == [
        ("call_0_0", "NOT_RUN"),
        ("call_1_0", "NOT_RUN"),
    ]
    assert harness.types()[-5:] == [
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "turn/end",
    ]
    end = of_type(harness.session, TurnEndEvent)[-1].data.reason
    assert end.kind == "max-tokens" and end.error == result.error
    notes = [i.text for i in transcript_items(harness.session.events) if isinstance(i, NoteItem)]
    assert notes == [f"Turn stopped: {result.error}"]  # the user is told what to raise
    assert harness.provider.remaining(harness.session.events) == 1  # the third was not asked
    assert run(agent.run_turn("go on")).text == "never asked"
    assert_pairs_on_the_wire(harness.provider.requests[-1])
    _requests_match_the_log(harness)
    assert len(harness.reopen().events) == len(harness.session.events)


def test_cuts_that_are_not_in_a_row_do_not_end_the_turn(harness: Harness):
    script = [_cut("a"), _touch("b"), _cut("c"), {"text": "Done."}]
    result = run(harness.agent(script).run_turn("make the files"))
    assert result.reason == "completed" and result.text == "Done."
    made = sorted(p.name for p in harness.workspace.iterdir())
    assert made == ["b"]


def test_a_cut_reply_whose_text_is_tool_calls_does_not_run_them(harness: Harness):
    """With ``text_tool_calls`` (small models), a cut reply whose text still parses as whole
    calls is recovered as calls, logged ``fromText``, and answered unrun like streamed ones."""
    call = {"name": "bash", "arguments": {"command": "touch from-text"}}
    text = f"```json\n{json.dumps(call)}\n```"
    script = [{"text": text, "finish": "max-tokens"}, {"text": "Done."}]
    agent = harness.agent(script, text_tool_calls=True)
    result = run(agent.run_turn("make it"))
    assert result.reason == "completed"
    assert not (harness.workspace / "from-text").exists()
    ((logged,),) = [of_type(harness.session, ToolCallEvent)]
    assert logged.data.from_text and logged.data.name == "bash"
    ((_, code, reply),) = results(harness.session)
    assert code == "NOT_RUN" and CUT_REPLY in reply
    _requests_match_the_log(harness)


def test_cut_replies_with_tool_calls_replay_to_the_same_log(harness: Harness):
    call = {"name": "bash", "arguments": {"command": "touch from-text"}}
    script = [
        _cut("a"),
        {"text": "Done."},
        {"text": json.dumps(call), "finish": "max-tokens"},
        _cut("b"),
    ]
    agent = harness.agent(script, text_tool_calls=True)
    prompts = ["one", "two"]
    assert [run(agent.run_turn(p)).reason for p in prompts] == ["completed", "max-tokens"]
    again = harness.agent([], text_tool_calls=True)
    again.session = Session.create(harness.store, cwd=harness.workspace)
    again.provider = ReplayProvider(list(harness.session.events))
    assert [run(again.run_turn(p)).reason for p in prompts] == ["completed", "max-tokens"]
    assert _comparable(again.session.events) == _comparable(harness.session.events)
    assert sorted(p.name for p in harness.workspace.iterdir()) == []
