"""A reply the provider stopped itself (``filtered``: a content filter, a refusal) that carries
complete tool calls: the calls are not run, each gets an error result so pairing holds, the
turn ends as the filter's error, and the next request is valid."""

from __future__ import annotations

from dsh.llm.replay import ReplayProvider
from dsh.llm.types import FILTERED_REPLY, Finish, TextDelta, ToolCallDelta
from dsh.surface import Session
from tests.agent.canned import Canned, assert_pairs_on_the_wire, results
from tests.agent.conftest import Harness, run
from tests.agent.test_stream_failures import _comparable


def test_a_filtered_reply_does_not_run_its_tool_calls_and_the_next_request_is_valid(
    harness: Harness,
):
    marker = harness.workspace / "ran"
    agent = harness.agent([])
    agent.provider = Canned(
        [
            TextDelta("Running it."),
            ToolCallDelta(0, id="c1", name="bash", arguments='{"command": "touch ran"}'),
            Finish("filtered"),
        ],
        [TextDelta("fine"), Finish("stop")],
    )
    result = run(agent.run_turn("one"))
    assert result.reason == "error" and result.error == FILTERED_REPLY
    assert not marker.exists()
    assert harness.types()[-5:] == [
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "turn/end",
    ]
    ((call_id, code, text),) = results(harness.session)
    assert call_id == "c1" and code == "NOT_RUN" and "filter" in text
    assert run(agent.run_turn("two")).text == "fine"
    assert_pairs_on_the_wire(agent.provider.requests[-1])
    assert len(harness.reopen().events) == len(harness.session.events)


def test_a_filtered_reply_with_tool_calls_replays_to_the_same_log(harness: Harness):
    agent = harness.agent([])
    agent.provider = Canned(
        [
            ToolCallDelta(0, id="c1", name="read_file", arguments='{"path": "a.txt"}'),
            Finish("filtered"),
        ],
        [TextDelta("fine"), Finish("stop")],
    )
    prompts = ["one", "two"]
    assert [run(agent.run_turn(p)).reason for p in prompts] == ["error", "completed"]
    again = harness.agent([])
    again.session = Session.create(harness.store, cwd=harness.workspace)
    again.provider = ReplayProvider(list(harness.session.events))
    assert [run(again.run_turn(p)).reason for p in prompts] == ["error", "completed"]
    assert _comparable(again.session.events) == _comparable(harness.session.events)
