"""A step's tool calls, run and logged (``run_tool_calls``), or answered without running.

Every call of a reply is logged (``tool/call``) before any runs; each then runs once the calls
it must follow (``dsh.agent.call_order``) have finished, and the results are logged in call
order, a repeated read-only call's with its note (``dsh.agent.repeated_calls``). A cancel
answers every call that had not finished with a ``CANCELLED`` error result saying why the turn
stopped; a call that was stopped mid-run with output (a ``bash`` command, ``OutputSoFar``) keeps
what it printed until then in that result, marked as cut short, bounded and masked as a finished
call's output. Each result is logged once, after its call's task is over: a crash before that
leaves the call for crash repair to answer. Calls past ``tools.max_calls_per_reply`` are logged
with the others, marked (``overLimit``), but never run: each is answered after the calls that
ran (``dsh.agent.call_cap``). Calls that are not run at all (an interrupted,
stopped or cut reply's) get an error result each (``answer_unrun_calls``), so every call has
its result. While a call runs, what it prints is shown by the faces, never logged
(``dsh.agent.tool_progress``): its tail ends once its result is logged.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from dsh.agent.call_cap import calls_to_run, over_limit_result, over_limit_warning
from dsh.agent.call_order import call_order
from dsh.agent.cancel import Cancelled, finished_or
from dsh.agent.repeated_calls import RepeatedCalls
from dsh.agent.tool_progress import RUNNING_OUTPUT
from dsh.agent.turn_close import tool_call, tool_result
from dsh.events import ToolCallBlock
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import OutputSoFar, ToolContext, ToolOutput
from dsh.tools.output_tail import OutputTail
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
    limit: int = 0,
) -> str | None:
    """Log the calls, run at most ``limit`` of them (0: all; ``dsh.agent.call_cap``), log
    results in call order. Why the turn was cancelled, if it was (None: every call finished)."""
    runs = calls_to_run(calls, limit)
    marks = [0 if index < runs else runs for index in range(len(calls))]  # past it: not run
    all_seqs = [
        session.append(tool_call(turn, step, c, from_text, mark)).seq
        for c, mark in zip(calls, marks, strict=True)
    ]
    if runs < len(calls):
        over_limit_warning(len(calls), runs)
    over = list(zip(calls[runs:], all_seqs[runs:], strict=True))
    calls, call_seqs = calls[:runs], all_seqs[:runs]
    read_only = functools.partial(is_read_only, tools)
    tasks: list[asyncio.Task[ToolOutput]] = []
    outputs_so_far = [OutputSoFar() for _ in calls]
    order = call_order(calls, read_only)
    for call, call_seq, after, so_far in zip(calls, call_seqs, order, outputs_so_far, strict=True):
        ready = [tasks[i] for i in after]
        tail = RUNNING_OUTPUT.begin(session.id, call_seq, tools.secrets)  # shown while it runs
        run = _execute(session, tools, policy, workspace, call, ready, so_far, tail)
        tasks.append(asyncio.create_task(run))
    cancelled: str | None = None
    try:
        for call, call_seq, task, so_far in zip(
            calls, call_seqs, tasks, outputs_so_far, strict=True
        ):
            if cancelled is None:
                try:
                    output = await guard(asyncio.shield(task))
                except Cancelled as stop:
                    cancelled = stop.reason
                    for pending in tasks:
                        pending.cancel()
            if cancelled is not None:
                answer = functools.partial(cancelled_answer, tools, cancelled, so_far)
                output = await finished_or(task, answer)
            append = functools.partial(log_tool_result, session, turn, step, call, call_seq)
            if cancelled is not None:
                append(output)
            else:
                repeats.log_result(call, output, append)
            RUNNING_OUTPUT.end(session.id, call_seq)  # its result is logged: the log shows it
        for call, call_seq in over:  # past the limit: never run, never offered for approval
            log_tool_result(
                session, turn, step, call, call_seq, over_limit_result(len(all_seqs), runs)
            )
    finally:
        for call_seq in call_seqs:
            RUNNING_OUTPUT.end(session.id, call_seq)
    return cancelled


def cancelled_answer(tools: ToolRegistry, reason: str, so_far: OutputSoFar) -> ToolOutput:
    """The ``CANCELLED`` result of a call the cancel stopped (``reason``: why the turn was
    cancelled), with what it printed until then when it left that (masked, as every output)."""
    text = f"[CANCELLED] this tool call was {reason}"
    if so_far.text is not None:
        printed = so_far.text or "(no output)\n"
        end = "" if printed.endswith("\n") else "\n"
        text += f" and stopped before it finished; its output until then:\n{printed}{end}"
        text += "[cut short by the cancel]"
    return tools.masked(ToolOutput(text, is_error=True, code="CANCELLED"))


def is_read_only(tools: ToolRegistry, call: ToolCallBlock) -> bool:
    """Whether ``call`` names a registered read-only tool (``kind == "read"``)."""
    return names_read_only(tools, call.name)


def names_read_only(tools: ToolRegistry, name: str) -> bool:
    """Whether ``name`` is a registered tool that only reads (``kind == "read"``)."""
    tool = tools.get(name)
    return tool is not None and tool.kind == "read"


async def _execute(
    session: Session,
    tools: ToolRegistry,
    policy: ApprovalPolicy,
    workspace: Path,
    call: ToolCallBlock,
    after: Sequence[asyncio.Task[ToolOutput]],
    so_far: OutputSoFar,
    tail: OutputTail,
) -> ToolOutput:
    """Run ``call`` once the calls it must follow (``call_order``) have finished; if it is
    cancelled, the tool leaves what it printed in ``so_far``; what it prints while it runs
    goes to ``tail`` (``dsh.agent.tool_progress``)."""
    if after:
        await asyncio.wait(after)
    ctx = ToolContext(
        workspace=workspace,
        session_id=session.id,
        call_id=call.id,
        history=session.events,
        history_index=session,
        output_so_far=so_far,
        output_tail=tail,
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
