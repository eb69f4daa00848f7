"""The ``replay`` provider: serve every model call of a recorded session again, keylessly.

The recorded ``session.jsonl`` is the fixture (docs/architecture.md, "Keyless everything").
Conversation calls are answered by the recorded ``assistant/message`` and ``request/error``
events in order (a failed stream's partial message is streamed again before its error; tool
calls recovered from text are served as that text, so the loop recovers them again, and a reply
the log kept as text is marked so that it stays text whatever the recovery rules are now
(``Finish.text_calls``; one the model was told could not run as calls is read as calls again),
and the calls written in a reply's text that did not run are those the log named
(``Finish.text_calls_not_run``); a reply that was cut finishes ``max-tokens`` with its recorded
request's ``max_tokens``, so the turn's error names the same bound); compaction calls by the
recorded ``compaction/summary`` events that came from exactly one model call
(``llmStreamCall: true``), via their ``rawOutput``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from dsh.errors import ProviderError
from dsh.events import (
    AssistantMessageEvent,
    CompactionSummaryEvent,
    Event,
    PluginSource,
    ReasoningBlock,
    RequestErrorEvent,
    RequestHeaderEvent,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultEvent,
    TurnEndEvent,
    UserMessageEvent,
)
from dsh.llm.replay_passes import (
    REPLAY_FAILED,
    passes_begun,
    recorded_passes,
    replayed_failure,
)
from dsh.llm.scripted import count_model_calls
from dsh.llm.types import (
    CUT_CALL_NOTICE,
    CUT_REPLY,
    FILTERED_REPLY,
    TEXT_CALLS_NOTICE,
    Finish,
    FinishReason,
    ModelRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageReport,
)
from dsh.store import EventStore

REPLAY_EXHAUSTED = "REPLAY_EXHAUSTED"


def _replayable_summaries(events: Sequence[Event]) -> list[CompactionSummaryEvent]:
    return [e for e in events if isinstance(e, CompactionSummaryEvent) and e.data.llm_stream_call]


def _stopped_finishes(events: Sequence[Event]) -> dict[int, FinishReason]:
    """The answers that finished short of a plain stop: a turn that ends ``max-tokens`` right
    after an answer without tool calls, a whole answer whose tool calls were answered
    ``NOT_RUN`` for ``CUT_REPLY``, and one followed by a ``CUT_CALL_NOTICE`` message (its text
    tool call was cut) were cut at the output limit; one that ends with
    ``FILTERED_REPLY`` right after a whole answer (its tool calls, if any, answered unrun) was
    stopped by the provider (``filtered``)."""
    finishes: dict[int, FinishReason] = {}
    last: Event | None = None
    for e in events:
        if isinstance(e, AssistantMessageEvent | RequestErrorEvent):
            last = e
        elif isinstance(last, AssistantMessageEvent) and last.data.error_code is None:
            if _answers_a_cut(e):
                finishes[last.seq] = "max-tokens"
            elif isinstance(e, TurnEndEvent) and e.data.reason.error == FILTERED_REPLY:
                finishes[last.seq] = "filtered"
            elif (
                isinstance(e, TurnEndEvent)
                and not last.data.message.tool_calls()
                and e.data.reason.kind == "max-tokens"
            ):
                finishes[last.seq] = "max-tokens"
        if isinstance(e, TurnEndEvent):
            last = None
    return finishes


def _output_limits(events: Sequence[Event]) -> dict[int, int]:
    """Each recorded answer's output-token bound: the ``max_tokens`` of the request header in
    force when it was asked (none when the header set none)."""
    limits: dict[int, int] = {}
    limit: object = None
    for e in events:
        if isinstance(e, RequestHeaderEvent):
            limit = (e.data.header.config.params or {}).get("max_tokens")
        elif isinstance(e, AssistantMessageEvent) and isinstance(limit, int):
            limits[e.seq] = limit
    return limits


def _told_unread(events: Sequence[Event]) -> set[int]:
    """The answers the model was told could not run as tool calls (a ``TEXT_CALLS_NOTICE``
    message ``{reply}-unread`` follows them): the log read their text as calls."""
    replies = {e.data.message.id: e.seq for e in events if isinstance(e, AssistantMessageEvent)}
    return {
        replies[e.data.id.removesuffix("-unread")]
        for e in events
        if isinstance(e, UserMessageEvent)
        and isinstance(e.data.source, PluginSource)
        and e.data.source.plugin == TEXT_CALLS_NOTICE
        and e.data.id.endswith("-unread")
        and e.data.id.removesuffix("-unread") in replies
    }


def _answers_a_cut(event: Event) -> bool:
    """A call's ``NOT_RUN`` result for a cut reply, or the message telling the model its text
    tool call was cut (``CUT_CALL_NOTICE``)."""
    if isinstance(event, ToolResultEvent):
        return _not_run_for_a_cut(event)
    source = event.data.source if isinstance(event, UserMessageEvent) else None
    return isinstance(source, PluginSource) and source.plugin == CUT_CALL_NOTICE


def _not_run_for_a_cut(event: ToolResultEvent) -> bool:
    error = event.data.error
    if error is None or error.code != "NOT_RUN" or not event.data.message.content:
        return False
    block = event.data.message.content[0]
    return isinstance(block, ToolResultBlock) and any(
        isinstance(part, TextBlock) and CUT_REPLY in part.text for part in block.content
    )


class ReplayProvider:
    """Answers model calls from a recorded log.

    Conversation call n (n = ``assistant/message`` + ``request/error`` events in ``history``)
    gets the n-th such recorded event. Compaction call k gets the k-th replayable summary, where
    k = max(replayable summaries in ``history``, compaction calls this instance already served):
    concurrent summary calls issued before any of them is logged get consecutive entries, and a
    resumed process continues from the log.
    """

    def __init__(
        self, recorded_events: Sequence[Event], *, name: str = "replay", model: str = "replay"
    ) -> None:
        self.name = name
        self.model = model
        self._calls: list[AssistantMessageEvent | RequestErrorEvent] = []
        self._partials: dict[int, AssistantMessageEvent] = {}
        """Recorded request/error seq → the partial message logged right after it."""
        for i, e in enumerate(recorded_events):
            if isinstance(e, AssistantMessageEvent) and e.data.error_code is not None:
                before = recorded_events[i - 1] if i else None
                if isinstance(before, RequestErrorEvent):
                    self._partials[before.seq] = e
            elif isinstance(e, AssistantMessageEvent | RequestErrorEvent):
                self._calls.append(e)
        self._finishes = _stopped_finishes(recorded_events)
        """Recorded answer → the finish that ended its turn early (output limit, filter)."""
        self._limits = _output_limits(recorded_events)
        self._unread = _told_unread(recorded_events)
        """Recorded answer → the output bound of its request (a cut reply reports it)."""
        self._summaries = _replayable_summaries(recorded_events)
        self._compactions_served = 0
        self._passes = recorded_passes(recorded_events)

    @classmethod
    def from_log(
        cls, store: EventStore, session_id: str, *, name: str = "replay", model: str = "replay"
    ) -> ReplayProvider:
        """A provider over a stored session, opened read-only."""
        log = store.open(session_id)
        try:
            events = list(log.events)
        finally:
            log.close()
        return cls(events, name=name, model=model)

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        """Serve the recorded answer to this call; the index is fixed when the call is made.
        A compaction call inside a pass (its ``compaction/start`` in ``history``) gets the next
        call of the same recorded pass, failing where the recorded call failed."""
        if request.purpose == "compaction":
            n = passes_begun(history) - 1
            if 0 <= n < len(self._passes):
                return self._serve_in_pass(n, request.answers)
            k = max(len(_replayable_summaries(history)), self._compactions_served)
            self._compactions_served = k + 1
            return self._serve_summary(k)
        return self._serve_call(count_model_calls(history))

    async def _serve_call(self, n: int) -> AsyncIterator[StreamEvent]:
        if n >= len(self._calls):
            raise _exhausted(
                f"the recording has {len(self._calls)} model calls; this is call {n + 1}"
            )
        event = self._calls[n]
        if isinstance(event, RequestErrorEvent):
            partial = self._partials.get(event.seq)
            if partial is not None:
                # The stream had started (so it was not retried): at least one event, even if
                # all that arrived is gone from the partial (half a tool call).
                for delta in _deltas(partial.data.message.content, None) or [TextDelta("")]:
                    yield delta
            error = event.data
            raise ProviderError(error.code, error.message, retryable=error.retryable)
        recorded = event.data
        calls = 0
        for delta in _deltas(recorded.message.content, recorded.recovered_from_text):
            yield delta
            calls += isinstance(delta, ToolCallDelta)
        if recorded.usage is not None:
            yield UsageReport(recorded.usage)
        finish = self._finishes.get(event.seq) or ("tool-calls" if calls else "stop")
        cut_at = self._limits.get(event.seq) if finish == "max-tokens" else None
        # a replayed cut names the recorded bound; text is read as calls iff the log did, and
        # its calls not run are those the log named
        yield Finish(
            finish,
            cut_at,
            text_calls=recorded.recovered_from_text is not None or event.seq in self._unread,
            text_calls_not_run=recorded.text_calls_not_run,
        )

    async def _serve_in_pass(self, n: int, answers: int) -> AsyncIterator[StreamEvent]:
        recorded = self._passes[n]
        if recorded.failure is not None:
            raise replayed_failure(recorded.failure)
        call = recorded.batch(answers) if answers > 1 else recorded.single()
        if isinstance(call, str):
            raise _exhausted(f"pass {n + 1}: {call}")
        if call is None:
            raise ProviderError(REPLAY_FAILED, "the recorded call failed or was refused")
        async for event in self._serve(call):
            yield event

    async def _serve_summary(self, k: int) -> AsyncIterator[StreamEvent]:
        if k >= len(self._summaries):
            raise _exhausted(
                f"the recording has {len(self._summaries)} replayable summaries; "
                f"this is compaction call {k + 1}"
            )
        async for event in self._serve(self._summaries[k]):
            yield event

    @staticmethod
    async def _serve(event: CompactionSummaryEvent) -> AsyncIterator[StreamEvent]:
        summary = event.data
        yield TextDelta(summary.raw_output or "")
        if summary.usage is not None:
            yield UsageReport(summary.usage)
        yield Finish("stop")


def _deltas(content: Sequence[object], recovered_from_text: str | None) -> list[StreamEvent]:
    """A recorded message as the stream that made it (recovered calls: as the whole text they
    were recovered from, which holds any prose the message kept before them)."""
    deltas: list[StreamEvent] = []
    for block in content:
        if isinstance(block, TextBlock) and recovered_from_text is not None:
            continue
        if isinstance(block, ReasoningBlock):
            deltas.append(
                ReasoningDelta(
                    block.text, signature=block.signature, redacted=block.redacted, new_block=True
                )
            )
        elif isinstance(block, TextBlock):
            deltas.append(TextDelta(block.text))
        elif isinstance(block, ToolCallBlock) and recovered_from_text is None:
            index = sum(isinstance(d, ToolCallDelta) for d in deltas)
            deltas.append(ToolCallDelta(index, block.id, block.name, block.arguments))
    if recovered_from_text is not None:
        deltas.append(TextDelta(recovered_from_text))
    return deltas


def _exhausted(message: str) -> ProviderError:
    return ProviderError(REPLAY_EXHAUSTED, message, retryable=False)
