"""A turn that fails unexpectedly while the second of its replies that both call ``call_0`` is
running: the open call answered is the later reply's, so the next request pairs."""

from __future__ import annotations

import pytest

from dsh.events import ToolCallEvent, ToolResultEvent
from tests.agent.canned import assert_pairs_on_the_wire
from tests.agent.conftest import Harness, run
from tests.same_call_ids import PROMPT, failing_second_result, prepare_workspace, same_id_agent


def test_a_failed_turn_answers_the_open_call_0_of_its_later_reply(harness: Harness) -> None:
    prepare_workspace(harness.workspace)
    agent = same_id_agent(harness.session, harness.workspace)
    bug = RuntimeError("a bug while logging the result")
    with failing_second_result(bug), pytest.raises(RuntimeError):
        run(agent.run_turn(PROMPT))
    events = harness.session.events
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [c.data.call_id for c in calls] == ["call_0", "call_0"]
    closing = [e for e in events if isinstance(e, ToolResultEvent)][-1]
    assert closing.data.error is not None and closing.data.error.code == "TURN_FAILED"
    assert closing.source_event_seqs == (calls[1].seq,)
    assert run(agent.run_turn("again")).reason == "completed"
    assert_pairs_on_the_wire(agent.provider.inner.requests[-1])  # type: ignore[attr-defined]
