"""A cancel that lands after ``step/start`` but before the model call went out: no empty reply
is logged, so it is no model call (the scripted and replay providers and the session figures
count calls in the log), and the turn still closes as aborted with its prompt kept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from dsh.events import AssistantMessageEvent, TurnEndEvent
from dsh.llm.scripted import count_model_calls
from dsh.llm.types import StreamEvent, TextDelta
from tests.agent.canned import of_type
from tests.agent.conftest import Harness, run


def test_a_cancel_landing_before_the_stream_starts_logs_no_reply_and_no_model_call(
    harness: Harness,
):
    agent = harness.agent([{"text": "the first answer"}])

    async def cancels_as_it_ends(agent_, turn):
        if turn == 1:
            agent_.cancel()  # the hook has already finished: the cancel lands after step/start

    agent.pre_step_hooks.append(cancels_as_it_ends)
    result = run(agent.run_turn("one"))
    assert result.reason == "aborted"
    assert not of_type(harness.session, AssistantMessageEvent)
    assert count_model_calls(harness.session.events) == 0
    assert harness.types()[-2:] == ["step/end", "turn/end"]
    assert run(agent.run_turn("two")).text == "the first answer"
    assert len(harness.reopen().events) == len(harness.session.events)


def test_a_cancel_after_the_call_went_out_keeps_it_as_an_empty_interrupted_reply(
    harness: Harness,
):
    """The boundary: once the request was sent, the call happened (a provider may bill it,
    the scripted provider has served its entry), so a cancel while waiting for the first token
    logs the empty interrupted reply that records it, and the next call gets the next entry."""
    agent = harness.agent([{"text": "never seen"}, {"text": "answered"}])
    scripted = agent.provider

    class Silent:
        name = "silent"

        async def stream(self, request, *, history) -> AsyncIterator[StreamEvent]:
            agent.cancel()
            await asyncio.Event().wait()  # the first token never comes
            yield TextDelta("never")

    agent.provider = Silent()
    assert run(agent.run_turn("one")).reason == "aborted"
    (reply,) = of_type(harness.session, AssistantMessageEvent)
    assert reply.data.interrupted and not reply.data.message.content
    assert count_model_calls(harness.session.events) == 1
    end = harness.session.events[-1]
    assert isinstance(end, TurnEndEvent) and end.data.reason.kind == "aborted"
    agent.provider = scripted
    assert run(agent.run_turn("two")).text == "answered"
