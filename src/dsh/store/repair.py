"""Crash repair: close a turn a dead process left open (docs/architecture.md, "The session log").

When a session whose last turn has no ``turn/end`` is opened for writing, the new lifecycle starts
with ``session/end-seed`` and then closes that turn: a synthetic error result for every tool call
that has none (``TOOL_OUTCOME_UNKNOWN`` when the call was logged as started, ``TOOL_NOT_STARTED``
when only the model asked for it), ``step/end`` for an open step, and ``turn/end{interrupted}``.
Compaction brackets are never repaired; ``session/end-seed`` makes them dead.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.events import (
    APPEND,
    AssistantMessageEvent,
    Event,
    EventBase,
    Message,
    SessionEndSeed,
    SessionEndSeedEvent,
    StepEnd,
    StepEndEvent,
    StepStartEvent,
    TextBlock,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResult,
    ToolResultBlock,
    ToolResultEvent,
    ToolSource,
    TurnEnd,
    TurnEndEvent,
    TurnEndReason,
    TurnStartEvent,
)

TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
TOOL_NOT_STARTED = "TOOL_NOT_STARTED"


def open_trailing_turn(events: Sequence[Event]) -> int | None:
    """Index of the ``turn/start`` of a turn that never ended, or None."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, TurnEndEvent):
            return None
        if isinstance(event, TurnStartEvent):
            return index
    return None


def plan_crash_repair(events: Sequence[Event], *, now_ms: int) -> list[Event]:
    """The events that close an open trailing turn, seqs continuing the log; [] if none is open."""
    start = open_trailing_turn(events)
    if start is None:
        return []
    turn_start = events[start]
    assert isinstance(turn_start, TurnStartEvent)
    turn = turn_start.data.turn

    asked: list[tuple[str, str, int]] = []  # (callId, name, step) in the order the model asked
    started: dict[str, ToolCallEvent] = {}
    answered: set[str] = set()
    open_step: int | None = None
    for event in events[start:]:
        if isinstance(event, StepStartEvent):
            open_step = event.data.step
        elif isinstance(event, StepEndEvent):
            open_step = None
        elif isinstance(event, AssistantMessageEvent) and event.surface_op == APPEND:
            asked.extend((c.id, c.name, event.data.step) for c in event.data.message.tool_calls())
        elif isinstance(event, ToolCallEvent):
            started[event.data.call_id] = event
        elif isinstance(event, ToolResultEvent) and event.surface_op == APPEND:
            block = event.data.message.content[0]
            if isinstance(block, ToolResultBlock):
                answered.add(block.tool_call_id)

    repairs: list[EventBase] = []

    def seq() -> int:
        return len(events) + len(repairs)

    repairs.append(SessionEndSeedEvent(seq=seq(), time=now_ms, data=SessionEndSeed()))
    for call_id, name, step in asked:
        if call_id in answered:
            continue
        call = started.get(call_id)
        code = TOOL_OUTCOME_UNKNOWN if call is not None else TOOL_NOT_STARTED
        text = (
            f"[{code}] the process ended while this tool call was running; its outcome is unknown"
            if call is not None
            else f"[{code}] the process ended before this tool call was started"
        )
        message = Message(
            id=f"repair-{call_id}",
            role="tool",
            content=(
                ToolResultBlock(
                    tool_call_id=call_id, content=(TextBlock(text=text),), is_error=True
                ),
            ),
            source=ToolSource(call_id=call_id),
        )
        repairs.append(
            ToolResultEvent(
                seq=seq(),
                time=now_ms,
                data=ToolResult(
                    turn=turn, step=step, message=message, error=ToolErrorInfo(name=name, code=code)
                ),
                surface_op=APPEND,
                source_event_seqs=(call.seq,) if call is not None else None,
            )
        )
    if open_step is not None:
        repairs.append(
            StepEndEvent(seq=seq(), time=now_ms, data=StepEnd(turn=turn, step=open_step))
        )
    repairs.append(
        TurnEndEvent(
            seq=seq(),
            time=now_ms,
            data=TurnEnd(
                turn=turn,
                reason=TurnEndReason(
                    kind="interrupted", error="the process ended before the turn finished"
                ),
            ),
        )
    )
    return repairs  # type: ignore[return-value]
