"""Tool calls and results as logged, and closing a turn that stopped between its events.

Crash repair (``dsh.store.repair``) closes such a turn when the log is next opened; a face that
survives the exception (the TUI notes it and takes the next prompt) would otherwise run its next
turn on a log whose last turn is open, and send a tool call without its result. So the loop
closes the turn itself before the exception goes on: an error result for every call the model
asked for that has none, ``step/end`` for an open step, ``turn/end{error}``. A turn cancelled
before its first step still logs its prompt (``log_unsent_prompt``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh.agent.loggable import loggable_text, loggable_value
from dsh.events import (
    Message,
    StepEnd,
    StepStart,
    TextBlock,
    ToolCall,
    ToolCallBlock,
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


def tool_call(
    turn: int, step: int, call: ToolCallBlock, from_text: bool, over_limit: int = 0
) -> ToolCall:
    """The logged ``tool/call`` of ``call`` (``from_text``: recovered from the reply's text;
    ``over_limit``: the per-reply limit this call is past, so it is not run; 0: it is not)."""
    fields = {"call_id": call.id, "name": call.name, "arguments": call.arguments}
    return ToolCall(turn=turn, step=step, from_text=from_text, over_limit=over_limit, **fields)


def log_unsent_prompt(session: Session, turn: int, step: int, pending: Sequence[Message]) -> None:
    """A turn cancelled before its first step (during a compaction) still logs its prompt, in a
    step of its own: what the user asked is never lost."""
    if pending:
        session.append(StepStart(turn=turn, step=step))
        for message in pending:
            session.append(message)
        session.append(StepEnd(turn=turn, step=step))


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
