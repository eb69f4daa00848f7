"""A reply the user stopped (or a failure cut) reaches the model marked as cut off, so it does
not carry on from half an answer as if it were whole; people's transcripts keep their own
marker, and every request still rebuilds byte-equal from the log."""

from __future__ import annotations

import asyncio

from dsh.agent import rebuild_requests
from dsh.events import (
    APPEND,
    AssistantMessage,
    AssistantMessageEvent,
    Message,
    ModelSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    encode_json,
    interruption_note,
    model_message,
    surface_message,
)
from dsh.llm.types import TextDelta
from dsh.transcript import render_human_transcript
from tests.agent.conftest import Harness, run

STOPPED = "[This reply was cut off here: the user stopped it.]"


def _stopped_then_asked_again(harness: Harness) -> None:
    script = [
        {"text": "Step one: delete build/. Step two: " * 2, "chunkDelayMs": 3_600_000},
        {"text": "carrying on"},
    ]
    agent = harness.agent(script, chunk_size=12)

    async def scenario() -> None:
        streamed = asyncio.Event()
        agent.on_stream = lambda event: streamed.set() if isinstance(event, TextDelta) else None
        task = asyncio.create_task(agent.run_turn("plan the clean-up"))
        await asyncio.wait_for(streamed.wait(), 30)
        agent.cancel()
        assert (await asyncio.wait_for(task, 30)).reason == "aborted"
        await agent.run_turn("ok next")

    run(scenario())


def test_a_reply_the_user_stopped_reaches_the_model_marked_cut_off(harness: Harness):
    _stopped_then_asked_again(harness)
    (_, second) = harness.provider.requests
    replies = [m for m in second.messages if m.role == "assistant"]
    assert [m.text() for m in replies] == [f"Step one: de\n\n{STOPPED}"]
    assert second.messages[-1].text() == "ok next"
    # The log keeps what streamed, unmarked: the mark is the model's view of it.
    (cut, _) = [e for e in harness.session.events if isinstance(e, AssistantMessageEvent)]
    assert cut.data.interrupted and cut.data.message.text() == "Step one: de"


def test_the_marked_requests_rebuild_byte_equal_from_the_log_and_after_a_reopen(
    harness: Harness,
):
    _stopped_then_asked_again(harness)
    sent = harness.provider.requests
    for events in (harness.session.events, harness.reopen().events):
        rebuilt = [request for _, request in rebuild_requests(events)]
        assert [encode_json(r.messages) for r in rebuilt] == [encode_json(r.messages) for r in sent]


def test_people_see_the_reply_without_the_models_mark(harness: Harness):
    _stopped_then_asked_again(harness)
    shown = render_human_transcript(harness.session.events)
    assert "Step one: de" in shown and "cut off here" not in shown


def _cut(content: tuple, error_code: str | None = None) -> AssistantMessageEvent:
    message = Message(
        id="a-0-0", role="assistant", content=content, source=ModelSource(provider="p", model="m")
    )
    data = AssistantMessage(
        turn=0, step=0, message=message, interrupted=True, error_code=error_code
    )
    return AssistantMessageEvent(seq=3, time=0, data=data, surface_op=APPEND)


def test_the_mark_names_why_the_reply_was_cut():
    assert interruption_note(None) == STOPPED
    assert "dsh was stopped" in interruption_note("PROCESS_ENDED")
    assert "model server failed (TIMEOUT)" in interruption_note("TIMEOUT")
    marked = model_message(_cut((TextBlock("half"),), "PROCESS_ENDED"))
    assert marked is not None and marked.text() == "half\n\n" + interruption_note("PROCESS_ENDED")


def test_a_cut_reply_with_tool_calls_or_nothing_in_it_gets_no_mark():
    call = ToolCallBlock(id="c0", name="read_file", arguments="{}")
    with_call = _cut((TextBlock("reading"), call))
    assert model_message(with_call) == surface_message(with_call)  # its results say NOT_RUN
    assert model_message(_cut(())) is None  # an empty reply is not sent at all
    thinking = model_message(_cut((ReasoningBlock("hmm"),)))
    assert thinking is not None and thinking.text() == STOPPED  # no blank lines before it


def test_a_whole_reply_is_sent_as_it_was_logged():
    whole = _cut((TextBlock("done"),))
    whole = AssistantMessageEvent(
        seq=whole.seq,
        time=0,
        data=AssistantMessage(turn=0, step=0, message=whole.data.message),
        surface_op=APPEND,
    )
    assert model_message(whole) is whole.data.message
