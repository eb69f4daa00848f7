"""Crash repair: close a turn a dead process left open (docs/architecture.md, "The session log").

When a session whose last turn has no ``turn/end`` is opened for writing, the new lifecycle starts
with ``session/end-seed`` and then closes that turn: a synthetic error result for every tool call
that has none (``TOOL_OUTCOME_UNKNOWN`` when the call was logged as started, ``TOOL_NOT_STARTED``
when only the model asked for it), ``step/end`` for an open step, and ``turn/end{interrupted}``.
Compaction brackets are never repaired; ``session/end-seed`` makes them dead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dsh.events import (
    APPEND,
    AssistantMessageEvent,
    Event,
    EventBase,
    Message,
    OpenCalls,
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


@dataclass(slots=True)
class AskedCall:
    """A tool call the model asked for in the turn being closed."""

    call_id: str
    name: str
    step: int
    started: ToolCallEvent | None = None
    """Its ``tool/call`` event, when the call was logged as started."""


@dataclass(slots=True)
class OpenTurn:
    """What closing a turn needs from its events."""

    unanswered: list[AskedCall]
    """The calls without a result, in the order the model asked for them."""
    open_step: int | None
    """The step without a ``step/end``, if any."""


def scan_open_turn(events: Iterable[Event]) -> OpenTurn:
    """Read a turn's events (from its ``turn/start`` on). Call ids may repeat across the turn's
    replies (servers that number each reply's calls from ``call_0``), so calls are paired by
    ``OpenCalls``: a ``tool/call`` or a result belongs to the nearest earlier asked call of its
    id that has none yet."""
    asked: OpenCalls[AskedCall] = OpenCalls()
    open_step: int | None = None
    for event in events:
        if isinstance(event, StepStartEvent):
            open_step = event.data.step
        elif isinstance(event, StepEndEvent):
            open_step = None
        elif isinstance(event, AssistantMessageEvent) and event.surface_op == APPEND:
            for c in event.data.message.tool_calls():
                asked.open(c.id, AskedCall(c.id, c.name, event.data.step))
        elif isinstance(event, ToolCallEvent):
            call = asked.latest(event.data.call_id)
            if call is not None and call.started is None:
                call.started = event
        elif isinstance(event, ToolResultEvent) and event.surface_op == APPEND:
            block = event.data.message.content[0]
            if isinstance(block, ToolResultBlock):
                asked.answer(block.tool_call_id)
    return OpenTurn(asked.pending(), open_step)


def plan_crash_repair(events: Sequence[Event], *, now_ms: int) -> list[Event]:
    """The events that close an open trailing turn, seqs continuing the log; [] if none is open."""
    start = open_trailing_turn(events)
    if start is None:
        return []
    turn_start = events[start]
    assert isinstance(turn_start, TurnStartEvent)
    turn = turn_start.data.turn
    scanned = scan_open_turn(events[start:])
    open_step = scanned.open_step

    repairs: list[EventBase] = []

    def seq() -> int:
        return len(events) + len(repairs)

    repairs.append(SessionEndSeedEvent(seq=seq(), time=now_ms, data=SessionEndSeed()))
    for asked in scanned.unanswered:
        call_id, name, step, call = asked.call_id, asked.name, asked.step, asked.started
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
