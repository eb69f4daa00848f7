"""Closing a turn an unexpected exception stopped between its events.

Crash repair (``dsh.store.repair``) closes such a turn when the log is next opened; a face that
survives the exception (the TUI notes it and takes the next prompt) would otherwise run its next
turn on a log whose last turn is open, and send a tool call without its result. So the loop
closes the turn itself before the exception goes on: an error result for every call the model
asked for that has none, ``step/end`` for an open step, ``turn/end{error}``.
"""

from __future__ import annotations

from typing import Any

from dsh.agent.loggable import loggable_text, loggable_value
from dsh.events import (
    APPEND,
    AssistantMessageEvent,
    Message,
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
    TurnEndReason,
)
from dsh.surface import Session

TURN_FAILED = "TURN_FAILED"


def tool_result(
    turn: int, step: int, call_id: str, name: str, text: str, code: str | None, meta: Any = None
) -> ToolResult:
    """The logged result of call ``call_id``: an error result when ``code`` is given."""
    block = ToolResultBlock(
        tool_call_id=call_id,
        content=(TextBlock(text=loggable_text(text)),),
        is_error=code is not None,
    )
    message = Message(
        id=f"r-{call_id}", role="tool", content=(block,), source=ToolSource(call_id=call_id)
    )
    error = ToolErrorInfo(name=name, code=code) if code is not None else None
    return ToolResult(turn=turn, step=step, message=message, error=error, meta=loggable_value(meta))


def close_failed_turn(session: Session, start_seq: int, turn: int, error: str) -> None:
    """Close turn ``turn`` (its ``turn/start`` is ``start_seq``) after ``error``."""
    asked: list[tuple[str, str, int]] = []  # (callId, name, step) in the order the model asked
    started: dict[str, int] = {}
    answered: set[str] = set()
    open_step: int | None = None
    for event in session.events[start_seq:]:
        if isinstance(event, StepStartEvent):
            open_step = event.data.step
        elif isinstance(event, StepEndEvent):
            open_step = None
        elif isinstance(event, AssistantMessageEvent) and event.surface_op == APPEND:
            asked.extend((c.id, c.name, event.data.step) for c in event.data.message.tool_calls())
        elif isinstance(event, ToolCallEvent):
            started[event.data.call_id] = event.seq
        elif isinstance(event, ToolResultEvent) and event.surface_op == APPEND:
            block = event.data.message.content[0]
            if isinstance(block, ToolResultBlock):
                answered.add(block.tool_call_id)
    for call_id, name, step in asked:
        if call_id in answered:
            continue
        text = f"[{TURN_FAILED}] the turn failed before this tool call was answered: {error}"
        call_seq = started.get(call_id)
        session.append(
            tool_result(turn, step, call_id, name, text, TURN_FAILED),
            source_event_seqs=[call_seq] if call_seq is not None else None,
        )
    if open_step is not None:
        session.append(StepEnd(turn=turn, step=open_step))
    session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="error", error=error)))
