"""A step's tool calls, run and logged (``run_tool_calls``), or answered without running.

Every call of a reply is logged (``tool/call``) before any runs; each then runs once the calls
it must follow (``dsh.agent.call_order``) have finished, and the results are logged in call
order, a repeated read-only call's with its note (``dsh.agent.repeated_calls``). A cancel
answers every call that had not finished with a ``CANCELLED`` error result saying why the turn
stopped. Calls that are not run at all (an interrupted, stopped or cut reply's) get an error
result each (``answer_unrun_calls``), so every call has its result.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from dsh.agent.call_order import call_order
from dsh.agent.cancel import Cancelled, finished_or
from dsh.agent.repeated_calls import RepeatedCalls
from dsh.agent.turn_close import tool_call, tool_result
from dsh.events import ToolCallBlock
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.registry import ToolRegistry

Guard = Callable[[Awaitable[ToolOutput]], Awaitable[ToolOutput]]
"""Awaits a call's output unless the user cancels first (then raises ``Cancelled``)."""


async def run_tool_calls(
    session: Session,
    tools: ToolRegistry,
    policy: ApprovalPolicy,
    workspace: Path,
    calls: Sequence[ToolCallBlock],
    *,
    turn: int,
    step: int,
    from_text: bool,
    guard: Guard,
    repeats: RepeatedCalls,
) -> str | None:
    """Log the calls, run them, log results in call order. Why the turn was cancelled, if it
    was (None: every call finished)."""
    call_seqs = [session.append(tool_call(turn, step, c, from_text)).seq for c in calls]
    read_only = functools.partial(is_read_only, tools)
    tasks: list[asyncio.Task[ToolOutput]] = []
    for call, after in zip(calls, call_order(calls, read_only), strict=True):
        ready = [tasks[i] for i in after]
        tasks.append(asyncio.create_task(_execute(session, tools, policy, workspace, call, ready)))
    cancelled: str | None = None
    for call, call_seq, task in zip(calls, call_seqs, tasks, strict=True):
        if cancelled is None:
            try:
                output = await guard(asyncio.shield(task))
            except Cancelled as stop:
                cancelled = stop.reason
                for pending in tasks:
                    pending.cancel()
        if cancelled is not None:
            output = await finished_or(task, cancelled_answer(cancelled))
        append = functools.partial(log_tool_result, session, turn, step, call, call_seq)
        if cancelled is not None:
            append(output)
        else:
            repeats.log_result(call, output, append)
    return cancelled


def cancelled_answer(reason: str) -> ToolOutput:
    """The ``CANCELLED`` result of a call the cancel stopped (``reason``: why the turn was
    cancelled)."""
    return ToolOutput(f"[CANCELLED] this tool call was {reason}", is_error=True, code="CANCELLED")


def is_read_only(tools: ToolRegistry, call: ToolCallBlock) -> bool:
    """Whether ``call`` names a registered read-only tool (``kind == "read"``)."""
    tool = tools.get(call.name)
    return tool is not None and tool.kind == "read"


async def _execute(
    session: Session,
    tools: ToolRegistry,
    policy: ApprovalPolicy,
    workspace: Path,
    call: ToolCallBlock,
    after: Sequence[asyncio.Task[ToolOutput]],
) -> ToolOutput:
    """Run ``call`` once the calls it must follow (``call_order``) have finished."""
    if after:
        await asyncio.wait(after)
    ctx = ToolContext(
        workspace=workspace, session_id=session.id, call_id=call.id, history=session.events
    )
    return await tools.execute(call.id, call.name, call.arguments, ctx, policy)


def log_tool_result(
    session: Session, turn: int, step: int, call: ToolCallBlock, call_seq: int, output: ToolOutput
) -> int:
    """Log ``call``'s result (and what its output asks to log after it); its seq."""
    code = (output.code or "TOOL_ERROR") if output.is_error else None
    result = tool_result(turn, step, call.id, call.name, output.text, code, output.meta)
    seq = session.append(result, source_event_seqs=[call_seq]).seq
    for payload in output.log:
        session.append(payload)
    return seq


def answer_unrun_calls(
    session: Session,
    turn: int,
    step: int,
    calls: Sequence[ToolCallBlock],
    code: str,
    why: str,
    from_text: bool = False,
) -> None:
    """Answer calls that are not run (an interrupted, stopped or cut reply's) with an error
    result each, so pairing holds."""
    for call in calls:
        seq = session.append(tool_call(turn, step, call, from_text)).seq
        output = ToolOutput(text=f"[{code}] {why}", is_error=True, code=code)
        log_tool_result(session, turn, step, call, seq, output)
