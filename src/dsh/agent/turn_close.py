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
    Message,
    StepEnd,
    TextBlock,
    ToolErrorInfo,
    ToolResult,
    ToolResultBlock,
    ToolSource,
    TurnEnd,
    TurnEndReason,
)
from dsh.store.repair import scan_open_turn
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
    scanned = scan_open_turn(session.events[start_seq:])  # ids may repeat across its replies
    for asked in scanned.unanswered:
        text = f"[{TURN_FAILED}] the turn failed before this tool call was answered: {error}"
        call = asked.started
        session.append(
            tool_result(turn, asked.step, asked.call_id, asked.name, text, TURN_FAILED),
            source_event_seqs=[call.seq] if call is not None else None,
        )
    if scanned.open_step is not None:
        session.append(StepEnd(turn=turn, step=scanned.open_step))
    session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="error", error=error)))
