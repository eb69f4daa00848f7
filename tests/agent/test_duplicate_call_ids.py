"""Two tool calls of one reply with the same id (some OpenAI-compatible servers number calls per
reply, or repeat one id): the reply is logged with unique ids, each call runs once and its result
answers its own id, so the next request pairs on every adapter's wire."""

from __future__ import annotations

import logging

import pytest

from dsh.events import AssistantMessageEvent, ToolCallEvent
from dsh.llm.types import Finish, TextDelta, ToolCallDelta
from tests.agent.canned import Canned, assert_pairs_on_the_wire, of_type, results
from tests.agent.conftest import Harness, run


def test_duplicate_tool_call_ids_in_one_reply_are_made_unique_and_each_call_runs_once(
    harness: Harness, caplog: pytest.LogCaptureFixture
):
    (harness.workspace / "a.txt").write_text("alpha\n")
    (harness.workspace / "b.txt").write_text("beta\n")
    agent = harness.agent([])
    agent.provider = Canned(
        [
            ToolCallDelta(0, id="call_0", name="read_file", arguments='{"path": "a.txt"}'),
            ToolCallDelta(1, id="call_0", name="read_file", arguments='{"path": "b.txt"}'),
            Finish("tool-calls"),
        ],
        [TextDelta("done"), Finish("stop")],
    )
    with caplog.at_level(logging.WARNING):
        assert run(agent.run_turn("read both")).text == "done"
    (asked, _) = of_type(harness.session, AssistantMessageEvent)
    ids = [c.id for c in asked.data.message.tool_calls()]
    assert len(set(ids)) == 2 and ids[0] == "call_0"
    assert [e.data.call_id for e in of_type(harness.session, ToolCallEvent)] == ids
    answered = results(harness.session)
    assert [r[0] for r in answered] == ids and [r[1] for r in answered] == [None, None]
    assert "alpha" in answered[0][2] and "beta" in answered[1][2]
    assert "call_0" in caplog.text and ids[1] in caplog.text
    assert_pairs_on_the_wire(agent.provider.requests[-1])
