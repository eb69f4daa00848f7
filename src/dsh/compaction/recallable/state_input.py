"""The state rewrite, checked against the summariser's window (spec §4.4, issue: no oversized
call): when the compact call for the state would not fit, its slice is split in order and
folded part by part, each part's state the merge base of the next."""

from __future__ import annotations

import dataclasses

from dsh.compaction.base import RegionPlan, RegionText
from dsh.compaction.model_summarizer import build_summary_request, output_budget
from dsh.compaction.recallable.texts import state_text
from dsh.compaction.summarizer import Summarizer, SummaryOutput, SummaryTask
from dsh.surface import message_tokens, system_tokens, tools_tokens


def request_tokens(task: SummaryTask) -> int:
    """Heuristic size of the call for ``task``, its output budget included."""
    request = build_summary_request(task, provider="-", model="-")
    return (
        system_tokens(request.system)
        + tools_tokens(request.tools)
        + sum(message_tokens(m) for m in request.messages)
        + output_budget(task)
    )


def split_state_task(task: SummaryTask, window: int | None) -> list[SummaryTask]:
    """``task`` itself when its call fits ``window``; else compact-layout parts, in order, each
    fitting the window with the previous state (at its cap) as background. A single message
    too large for any part travels alone."""
    if window is None or request_tokens(task) <= window:
        return [task]
    compact = dataclasses.replace(
        task, layout="compact", conversation=(), slice_range=None, output_limit=None
    )
    base = dataclasses.replace(compact, messages=(), previous="x" * (task.max_tokens * 4))
    room = max(1, window - request_tokens(base))
    parts: list[list[int]] = [[]]
    used = 0
    for index, message in enumerate(task.messages):
        price = message_tokens(message)
        if parts[-1] and used + price > room:
            parts.append([])
            used = 0
        parts[-1].append(index)
        used += price
    return [
        dataclasses.replace(compact, messages=tuple(task.messages[i] for i in part))
        for part in parts
    ]


async def fold_state(
    summarizer: Summarizer, region: RegionPlan, state_max_tokens: int, window: int | None
) -> RegionText:
    """The state of ``region``: one call, or one call per part folded left to right."""
    assert region.task is not None
    tasks = split_state_task(region.task, window)
    previous = region.task.previous
    output: SummaryOutput | None = None
    for task in tasks:
        output = await summarizer.summarize(dataclasses.replace(task, previous=previous))
        previous = state_text(region, output, state_max_tokens).summary
    assert output is not None
    text = state_text(region, output, state_max_tokens)
    if len(tasks) > 1:  # no single call produced it: replay cannot serve it as one call
        text = dataclasses.replace(text, raw_output=None, usage=None)
    return text
