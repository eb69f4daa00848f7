"""The replay provider: a recorded log answers every model call of a new run again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from dsh.errors import ProviderError
from dsh.events import (
    AssistantMessage,
    AssistantMessageEvent,
    CompactionEnd,
    CompactionStart,
    CompactionSummary,
    Event,
    Message,
    ModelSource,
    ReasoningBlock,
    RequestError,
    TextBlock,
    Usage,
)
from dsh.llm.assemble import StreamAssembler
from dsh.llm.replay import ReplayProvider
from dsh.llm.types import ModelRequest, Purpose, StreamEvent, TextDelta, UsageReport
from dsh.store import MemoryStore
from dsh.surface import Session
from tests.helpers import (
    append_chat_turn,
    append_tool_turn,
    assistant_message,
    new_session,
    user_message,
)

USAGE = Usage(input_tokens=50, output_tokens=7, cache_read_tokens=30)
SUMMARY_USAGE = Usage(input_tokens=400, output_tokens=60)


def collect(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    async def drain() -> list[StreamEvent]:
        return [event async for event in stream]

    return asyncio.run(drain())


def request(purpose: Purpose = "conversation") -> ModelRequest:
    return ModelRequest(
        provider="replay",
        model="replay",
        system="sys",
        tools=(),
        messages=(user_message("go"),),
        purpose=purpose,
    )


def serve(
    provider: ReplayProvider, history: Sequence[Event], purpose: Purpose = "conversation"
) -> StreamAssembler:
    return StreamAssembler().feed_all(collect(provider.stream(request(purpose), history=history)))


def summary(session: Session, raw: str, *, llm_stream_call: bool = True) -> None:
    """A compaction/summary as a summariser model call logs it (usage, rawOutput)."""
    session.append(
        CompactionSummary(
            compaction_id=f"cmp-{raw}",
            kind="state",
            summary=f"<summary>{raw}</summary>",
            shadowed_range=(0, 0),
            shadowed_seqs=(0,),
            shadowed_token_count=10,
            provider="fake",
            model="fake-model",
            usage=SUMMARY_USAGE if llm_stream_call else None,
            raw_output=raw if llm_stream_call else None,
            llm_stream_call=llm_stream_call,
        )
    )


def recorded_session() -> Session:
    """Chat turn, tool turn (two calls then a final reply), a failed call, a reasoning reply,
    and compaction summaries: two replayable ones around one that made no model call."""
    session = new_session(MemoryStore())
    append_chat_turn(session, "hello", "hi there", usage=USAGE)
    append_tool_turn(
        session,
        calls=[("read_file", '{"path":"a"}', "A"), ("grep", '{"q":"b"}', "B")],
        final="both read",
    )
    session.append(
        RequestError(turn=3, step=1, code="RATE_LIMITED", message="slow down", retryable=True)
    )
    session.append(
        AssistantMessage(
            turn=3, step=1, message=assistant_message("ok", reasoning="thinking it over")
        )
    )
    session.append(CompactionStart(compaction_id="cmp", turn=None))
    summary(session, "first summary")
    summary(session, "extractive, no model call", llm_stream_call=False)
    summary(session, "second summary")
    session.append(CompactionEnd(compaction_id="cmp", turn=None))
    return session


def recorded_messages(session: Session) -> list[AssistantMessageEvent]:
    return [e for e in session.events if isinstance(e, AssistantMessageEvent)]


def test_conversation_calls_get_the_recorded_messages_and_errors_in_order() -> None:
    recorded = recorded_session()
    provider = ReplayProvider(recorded.events)
    live = new_session(MemoryStore())
    expected = recorded_messages(recorded)

    for i, event in enumerate(expected[:3]):
        assembler = serve(provider, live.events)
        message = assembler.message(event.data.message.id, "fake", "fake-model")
        assert message == event.data.message  # tool call ids come back as recorded
        assert assembler.usage == event.data.usage
        assert assembler.finish == ("tool-calls" if message.tool_calls() else "stop"), i
        live.append(AssistantMessage(turn=1, step=i + 1, message=message, usage=assembler.usage))

    with pytest.raises(ProviderError) as caught:
        serve(provider, live.events)
    assert (caught.value.code, caught.value.detail, caught.value.retryable) == (
        "RATE_LIMITED",
        "slow down",
        True,
    )
    live.append(RequestError(turn=3, step=1, code="RATE_LIMITED", message="x", retryable=True))

    last = serve(provider, live.events)
    assert last.message("m", "fake", "fake-model").content == expected[3].data.message.content
    assert last.usage is None


def test_the_first_recorded_call_with_tool_calls_finishes_with_tool_calls() -> None:
    recorded = recorded_session()
    history = recorded.events[: recorded_messages(recorded)[1].seq]  # after the chat turn
    assembler = serve(ReplayProvider(recorded.events), history)
    assert [c.id for c in assembler.message("a", "p", "m").tool_calls()] == [
        c.id for c in recorded_messages(recorded)[1].data.message.tool_calls()
    ]
    assert assembler.finish == "tool-calls"


def test_a_call_past_the_recording_is_replay_exhausted() -> None:
    recorded = recorded_session()
    with pytest.raises(ProviderError) as caught:
        serve(ReplayProvider(recorded.events), recorded.events)
    assert caught.value.code == "REPLAY_EXHAUSTED"
    assert caught.value.retryable is False


def test_compaction_calls_get_replayable_summaries_by_counter() -> None:
    provider = ReplayProvider(recorded_session().events)
    events = collect(provider.stream(request("compaction"), history=()))
    assert events[0] == TextDelta("first summary")
    assert UsageReport(SUMMARY_USAGE) in events
    assembler = StreamAssembler().feed_all(events)
    assert assembler.finish == "stop"
    # The summary without a model call is skipped; the counter moves on.
    assert serve(provider, (), "compaction").text == "second summary"
    with pytest.raises(ProviderError, match="REPLAY_EXHAUSTED"):
        serve(provider, (), "compaction")


def test_two_concurrent_compaction_calls_get_consecutive_summaries() -> None:
    provider = ReplayProvider(recorded_session().events)

    async def both() -> list[list[StreamEvent]]:
        async def drain(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
            return [event async for event in stream]

        # Both issued before either summary is logged: history has none.
        first = provider.stream(request("compaction"), history=())
        second = provider.stream(request("compaction"), history=())
        return list(await asyncio.gather(drain(first), drain(second)))

    first, second = asyncio.run(both())
    assert StreamAssembler().feed_all(first).text == "first summary"
    assert StreamAssembler().feed_all(second).text == "second summary"


def test_a_resumed_replay_counts_the_summaries_already_logged() -> None:
    recorded = recorded_session()
    live = new_session(MemoryStore())
    summary(live, "first summary")
    fresh = ReplayProvider(recorded.events)
    assert serve(fresh, live.events, "compaction").text == "second summary"


def test_compaction_calls_do_not_move_the_conversation_index() -> None:
    provider = ReplayProvider(recorded_session().events)
    serve(provider, (), "compaction")
    assert serve(provider, ()).text == "hi there"


def test_from_log_reads_a_stored_session_read_only() -> None:
    store = MemoryStore()
    session = new_session(store)
    append_chat_turn(session, "hello", "recorded reply")
    session.close()
    provider = ReplayProvider.from_log(store, session.id)
    assert serve(provider, ()).text == "recorded reply"
    # Nothing holds the session: it can still be opened for writing.
    store.open(session.id, writable=True).close()


def test_signed_and_redacted_reasoning_is_served_again_block_for_block() -> None:
    recorded = new_session(MemoryStore())
    content = (
        ReasoningBlock(text="first thought", signature="SIG-A"),
        ReasoningBlock(text="", redacted="OPAQUE"),
        TextBlock(text="answer"),
    )
    message = Message(
        id="a1", role="assistant", content=content, source=ModelSource(provider="p", model="m")
    )
    recorded.append(AssistantMessage(turn=1, step=1, message=message))
    served = serve(ReplayProvider(recorded.events), new_session(MemoryStore()).events)
    assert served.message("a1", "p", "m").content == content


def test_a_recorded_failure_is_raised_again_with_the_recorded_words() -> None:
    from dsh.errors import DshError
    from dsh.llm.replay_passes import replayed_failure

    provider = replayed_failure("INVALID_RESPONSE: the summary was cut off")
    assert isinstance(provider, ProviderError) and provider.code == "INVALID_RESPONSE"
    assert str(provider) == "INVALID_RESPONSE: the summary was cut off"
    other = replayed_failure("the surface changed while summarising")
    assert type(other) is DshError and str(other) == "the surface changed while summarising"


def test_a_pass_asked_for_more_calls_than_it_recorded_says_so() -> None:
    from dsh.llm.replay_passes import RecordedPass

    recorded = RecordedPass()
    assert recorded.failure is None and recorded.batch(2) is None  # nothing to answer with
    assert recorded.single() == "the recorded pass made no more model calls"


def test_only_a_turn_ended_by_the_filter_replays_its_answer_as_filtered() -> None:
    from dsh.events import TurnEnd, TurnEndEvent, TurnEndReason
    from dsh.llm.types import FILTERED_REPLY, Finish

    def ended(error: str) -> list[Event]:
        session = new_session(MemoryStore())
        append_chat_turn(session, "hello", "half an answer")
        events = [e for e in session.events if not isinstance(e, TurnEndEvent)]
        end = TurnEnd(turn=1, reason=TurnEndReason(kind="error", error=error))
        return [*events, TurnEndEvent(seq=events[-1].seq + 1, time=0, data=end)]

    filtered = collect(ReplayProvider(ended(FILTERED_REPLY)).stream(request(), history=()))
    assert filtered[-1] == Finish("filtered", text_calls=False, text_calls_not_run=())
    crashed = collect(ReplayProvider(ended("RuntimeError: boom")).stream(request(), history=()))
    # another error after the answer: not the filter's
    assert crashed[-1] == Finish("stop", text_calls=False, text_calls_not_run=())
