"""``session_stats`` counts by type in one pass; its figures equal a per-event reference count,
and so do those read from a per-type index (``stats_by_type``) and those summed in parts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dsh.events import (
    AssistantMessage,
    AssistantMessageEvent,
    CompactionEnd,
    CompactionEndEvent,
    CompactionPlan,
    CompactionPlanEvent,
    CompactionSummary,
    CompactionSummaryEvent,
    Event,
    OpaqueEvent,
    ReplaceOp,
    RequestError,
    RequestErrorEvent,
    StepStart,
    StepStartEvent,
    ToolCall,
    ToolCallEvent,
    TurnStart,
    TurnStartEvent,
    Usage,
)
from dsh.llm.scripted import count_model_calls
from dsh.transcript.stats import SessionStats, add_stats, session_stats, stats_by_type
from tests.helpers import assistant_message

_usage = st.none() | st.builds(
    Usage,
    input_tokens=st.integers(0, 10**6),
    output_tokens=st.integers(0, 10**5),
    cache_read_tokens=st.none() | st.integers(0, 10**6),
    cache_write_tokens=st.none() | st.integers(0, 10**6),
)


def _assistant(usage: Usage | None, replaced: bool, cut: bool = False) -> Event:
    data = AssistantMessage(
        turn=1,
        step=1,
        message=assistant_message("hi"),
        usage=usage,
        interrupted=cut,
        error_code="CONNECTION" if cut else None,
    )
    op = ReplaceOp(start=0, end=0) if replaced else "append"
    return AssistantMessageEvent(seq=0, time=0, data=data, surface_op=op)


def _summary(usage: Usage | None) -> Event:
    data = CompactionSummary(
        compaction_id="k",
        summary="s",
        shadowed_range=(0, 0),
        shadowed_seqs=(0,),
        shadowed_token_count=1,
        provider="p",
        model="m",
        usage=usage,
    )
    return CompactionSummaryEvent(seq=0, time=0, data=data)


_event = st.one_of(
    st.builds(_assistant, _usage, st.booleans(), st.booleans()),
    st.builds(_summary, _usage),
    st.builds(
        lambda error, pass_id: CompactionEndEvent(
            seq=0,
            time=0,
            data=CompactionEnd(compaction_id="k", pass_id=pass_id, turn=None, error=error),
        ),
        st.none() | st.just("failed"),
        st.none() | st.just("p1"),  # an older log's bracket has no pass
    ),
    st.just(CompactionPlanEvent(seq=0, time=0, data=CompactionPlan(pass_id="p1", regions=()))),
    st.just(TurnStartEvent(seq=0, time=0, data=TurnStart(turn=1))),
    st.just(StepStartEvent(seq=0, time=0, data=StepStart(turn=1, step=1))),
    st.just(
        ToolCallEvent(
            seq=0, time=0, data=ToolCall(turn=1, step=1, call_id="c", name="n", arguments="{}")
        )
    ),
    st.just(
        RequestErrorEvent(
            seq=0,
            time=0,
            data=RequestError(turn=1, step=1, code="e", message="m", retryable=False),
        )
    ),
    st.just(OpaqueEvent(type="x/y", seq=0, time=0, raw=b"{}")),
)


def reference_stats(events: list[Event]) -> SessionStats:
    """The figures counted event by event, each event classified on its own."""
    n = dict.fromkeys(("turns", "steps", "calls", "failed", "tools", "compactions"), 0)
    tokens = dict.fromkeys(("inp", "read", "write", "out", "s_in", "s_out"), 0)
    for event in events:
        if isinstance(event, TurnStartEvent):
            n["turns"] += 1
        elif isinstance(event, StepStartEvent):
            n["steps"] += 1
        elif isinstance(event, ToolCallEvent):
            n["tools"] += 1
        elif isinstance(event, RequestErrorEvent):
            n["calls"] += 1
            n["failed"] += 1
        elif isinstance(event, AssistantMessageEvent) and event.surface_op == "append":
            n["calls"] += event.data.error_code is None  # a partial belongs to its error
            if (usage := event.data.usage) is not None:
                tokens["inp"] += usage.input_tokens
                tokens["read"] += usage.cache_read_tokens or 0
                tokens["write"] += usage.cache_write_tokens or 0
                tokens["out"] += usage.output_tokens
        elif isinstance(event, CompactionPlanEvent):
            n["compactions"] += 1  # a pass that committed, however many regions it has
        elif isinstance(event, CompactionEndEvent):
            n["compactions"] += event.data.error is None and event.data.pass_id is None
        elif isinstance(event, CompactionSummaryEvent) and event.data.usage is not None:
            tokens["s_in"] += event.data.usage.request_tokens()
            tokens["s_out"] += event.data.usage.output_tokens
    return SessionStats(
        events=len(events),
        turns=n["turns"],
        steps=n["steps"],
        model_calls=n["calls"],
        failed_calls=n["failed"],
        tool_calls=n["tools"],
        input_tokens=tokens["inp"],
        cache_read_tokens=tokens["read"],
        cache_write_tokens=tokens["write"],
        output_tokens=tokens["out"],
        compactions=n["compactions"],
        summarizer_input_tokens=tokens["s_in"],
        summarizer_output_tokens=tokens["s_out"],
    )


@given(st.lists(_event, max_size=40))
def test_stats_counted_by_type_equal_the_event_by_event_count(events: list[Event]) -> None:
    assert session_stats(events) == reference_stats(events)


@given(st.lists(_event, max_size=40), st.integers(0, 40))
def test_stats_from_the_per_type_index_and_summed_parts_equal_the_whole_count(
    events: list[Event], cut: int
) -> None:
    by_type: dict[type, list[Event]] = {}
    for event in events:
        by_type.setdefault(type(event), []).append(event)
    indexed = stats_by_type(len(events), lambda kind: by_type.get(kind, []))
    parts = add_stats(session_stats(events[:cut]), session_stats(events[cut:]))
    assert indexed == parts == session_stats(events)


@given(st.lists(_event, max_size=20))
def test_stats_of_an_iterator_equal_those_of_the_list(events: list[Event]) -> None:
    assert session_stats(iter(events)) == session_stats(events)


def test_a_failed_stream_with_a_partial_reply_is_one_failed_call_not_two() -> None:
    error = RequestErrorEvent(
        seq=1,
        time=0,
        data=RequestError(turn=1, step=1, code="CONNECTION", message="m", retryable=True),
    )
    events = [_assistant(None, False), error, _assistant(None, False, cut=True)]
    stats = session_stats(events)
    assert (stats.model_calls, stats.failed_calls) == (2, 1)
    assert stats.model_calls == count_model_calls(events)  # as the keyless providers count
