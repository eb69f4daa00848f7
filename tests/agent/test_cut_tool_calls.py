"""A reply cut at the output-token limit (``max-tokens``) that carries tool calls: the calls'
arguments may have been cut mid-stream, so none of them runs. Each gets a ``NOT_RUN`` result
telling the model to issue it again; the turn goes on, and a second cut reply with tool calls
in a row ends the turn ``max-tokens`` with an error naming the option that raises the limit. A
tool call written as text and cut so it no longer parses counts as a cut call: the model is told
in a message of its own."""

from __future__ import annotations

import json
from typing import Any

from dsh.agent import rebuild_requests
from dsh.agent.step_outcome import CUT_TEXT_CALL_NOT_RUN
from dsh.events import PluginSource, ToolCallEvent, TurnEndEvent, UserMessageEvent, encode_json
from dsh.llm.replay import ReplayProvider
from dsh.llm.types import CUT_CALL_NOTICE, CUT_REPLY
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


# ---- a tool call written as text, cut so it no longer parses ---------------------------------

_TEXT_CALL = '{"name": "bash", "arguments": {"command": "touch from-text"}}'


def _cut_text_call(text: str = f'{_TEXT_CALL}\n{{"name": "ba') -> dict[str, Any]:
    """A cut reply whose text began as calls: one whole, then one cut mid-object (as Qwen2.5-
    Coder 0.5B wrote on llama-server), so it no longer parses and stays text."""
    return {"text": text, "finish": "max-tokens"}


def _notices(session: Session) -> list[UserMessageEvent]:
    return [
        e
        for e in of_type(session, UserMessageEvent)
        if isinstance(e.data.source, PluginSource) and e.data.source.plugin == CUT_CALL_NOTICE
    ]


def test_a_cut_text_tool_call_is_not_run_and_the_model_is_told_so(harness: Harness):
    script = [_cut_text_call(), _touch("retried"), {"text": "Done."}]
    agent = harness.agent(script, text_tool_calls=True)
    result = run(agent.run_turn("make the files"))
    assert result.reason == "completed" and result.text == "Done."
    assert sorted(p.name for p in harness.workspace.iterdir()) == ["retried"]
    (notice,) = _notices(harness.session)
    assert notice.data.text() == CUT_TEXT_CALL_NOT_RUN and notice.data.role == "user"
    assert CUT_REPLY in notice.data.text() and "not run" in notice.data.text()
    assert harness.types()[2:7] == [
        "user/message",
        "request/header",
        "request/context",
        "assistant/message",
        "user/message",  # the notice, in the step of the reply it answers
    ]
    second = harness.provider.requests[1]
    assert second.messages[-1].text() == CUT_TEXT_CALL_NOT_RUN  # what the model reads next
    assert second.messages[-2].text().startswith(_TEXT_CALL)  # after its own cut text
    assert_pairs_on_the_wire(second)
    _requests_match_the_log(harness)
    assert len(harness.reopen().events) == len(harness.session.events)


def test_two_cuts_in_a_row_end_the_turn_whether_the_calls_were_text_or_not(harness: Harness):
    tagged = _cut_text_call('<tool_call>\n{"name": "bash", "arguments": {"command": "tou')
    script = [tagged, _cut_text_call(), _cut_text_call(), _cut("streamed"), {"text": "later"}]
    agent = harness.agent(script, text_tool_calls=True, params={"max_tokens": 57})
    for asked in (2, 4):  # text then text; text then streamed calls
        result = run(agent.run_turn("make the files"))
        assert result.reason == "max-tokens"
        assert "(57 tokens) twice in a row" in result.error
        assert "provider.max_output_tokens" in result.error
        assert harness.provider.remaining(harness.session.events) == len(script) - asked
    assert len(_notices(harness.session)) == 2  # one per turn: the first cut's
    assert list(harness.workspace.iterdir()) == []
    _requests_match_the_log(harness)


def test_a_cut_answer_ends_the_turn_naming_the_option_that_raises_the_limit(harness: Harness):
    call_like = _cut_text_call()["text"]
    texts = ["The answer is a long sent", call_like]
    script = [{"text": text, "finish": "max-tokens"} for text in texts] + [{"text": "later"}]
    for text, text_calls in zip(texts, [True, False], strict=True):
        agent = harness.agent(script, text_tool_calls=text_calls, params={"max_tokens": 64})
        result = run(agent.run_turn("explain"))
        assert result.reason == "max-tokens" and result.text == text
        assert "cut at its output limit (64 tokens)" in result.error
        assert "may be incomplete" in result.error
        assert "provider.max_output_tokens" in result.error
    assert harness.provider.remaining(harness.session.events) == 1
    assert _notices(harness.session) == []  # no call, or calls are not read from text
    notes = [i.text for i in transcript_items(harness.session.events) if isinstance(i, NoteItem)]
    assert len(notes) == 2 and all("provider.max_output_tokens" in n for n in notes)


def test_cut_text_tool_calls_replay_to_the_same_log(harness: Harness):
    script = [_cut_text_call(), {"text": "Done."}, _cut_text_call(), _cut_text_call()]
    agent = harness.agent(script, text_tool_calls=True)
    prompts = ["one", "two"]
    assert [run(agent.run_turn(p)).reason for p in prompts] == ["completed", "max-tokens"]
    again = harness.agent([], text_tool_calls=True)
    again.session = Session.create(harness.store, cwd=harness.workspace)
    again.provider = ReplayProvider(list(harness.session.events))
    assert [run(again.run_turn(p)).reason for p in prompts] == ["completed", "max-tokens"]
    assert _comparable(again.session.events) == _comparable(harness.session.events)
    assert len(_notices(again.session)) == 2


def test_a_replayed_cut_names_the_recorded_output_limit(harness: Harness):
    """A replay's own requests carry no ``max_tokens``; the replay provider reports the recorded
    request's bound with the cut, so the replayed turn ends with the same error."""
    script = [_cut("a"), _cut("b"), {"text": "The answer is a long sent", "finish": "max-tokens"}]
    agent = harness.agent(script, params={"max_tokens": 57})
    ends = [run(agent.run_turn(p)).error for p in ["one", "two"]]
    assert "(57 tokens) twice in a row" in ends[0] and "limit (57 tokens), so" in ends[1]
    again = harness.agent([])  # as ``dsh run --provider replay``: no generation parameters
    again.session = Session.create(harness.store, cwd=harness.workspace)
    again.provider = ReplayProvider(list(harness.session.events))
    assert [run(again.run_turn(p)).error for p in ["one", "two"]] == ends
