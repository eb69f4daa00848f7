"""The state rewrite, checked against the summariser's window (no oversized call).

When the compact call for the state would not fit, its slice is split in order and folded part
by part, each part's state the merge base of the next (docs/compaction.md, "Summariser calls
ride the conversation's cache")."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable

import msgspec

from dsh.compaction.base import RegionPlan, RegionText
from dsh.compaction.model_summarizer import as_transcript, build_summary_request, output_budget
from dsh.compaction.recallable.texts import slice_text, state_text
from dsh.compaction.summarizer import Summarizer, SummaryOutput, SummaryTask
from dsh.errors import ProviderError
from dsh.surface import message_tokens, system_tokens, tools_tokens

log = logging.getLogger("dsh.compaction")

OVERFLOW = "CONTEXT_WINDOW_EXCEEDED"
"""The code of a call refused as too long for the provider's window (``ErrorCode``)."""


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
        price = message_tokens(as_transcript(message))  # what a compact call sends
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
    summarizer: Summarizer,
    region: RegionPlan,
    state_max_tokens: int,
    window: int | None,
    ranked: Callable[[], Awaitable[RegionPlan]] | None = None,
) -> RegionText:
    """The state of ``region``: one call, or one call per part folded left to right. Each
    answer is written into ``ranked()`` (the region with its replaced values, ranked beside the
    call) when given, else into ``region``. A riding call the provider refuses as too long for
    its window (a window smaller than dsh's figure: the usual cause of an overflow) is asked
    again in the compact layout, which leaves the tools and the rest of the conversation out;
    before, the pass failed, and with an overflow pass the turn."""
    task = region.task
    assert task is not None
    try:
        return await _fold(summarizer, region, task, state_max_tokens, window, ranked)
    except ProviderError as exc:
        if task.layout != "riding" or exc.code != OVERFLOW:
            raise
        log.info("the riding state call overflowed (%s): asking in the compact layout", exc)
    compact = dataclasses.replace(
        task, layout="compact", conversation=(), slice_range=None, output_limit=None
    )
    return await _fold(summarizer, region, compact, state_max_tokens, window, ranked)


async def _fold(
    summarizer: Summarizer,
    region: RegionPlan,
    task: SummaryTask,
    state_max_tokens: int,
    window: int | None,
    ranked: Callable[[], Awaitable[RegionPlan]] | None,
) -> RegionText:
    tasks = split_state_task(task, window)
    previous = task.previous
    text: RegionText | None = None
    for task in tasks:
        text = await _one_state(
            summarizer,
            region,
            dataclasses.replace(task, previous=previous),
            state_max_tokens,
            ranked,
        )
        previous = text.summary
    assert text is not None
    if len(tasks) > 1:  # no single call produced it: replay cannot serve it as one call
        text = msgspec.structs.replace(text, raw_output=None, usage=None)
    return text


def checked_state(
    region: RegionPlan, task: SummaryTask, output: SummaryOutput, state_max_tokens: int
) -> RegionText:
    """The state from ``output``, validated against ``task``'s slice, previous state and focus
    (``state_text``); raises ``ProviderError`` when it is not a usable state."""
    source = "\n".join(
        part for part in (slice_text(task.messages), task.previous, task.focus) if part
    )
    return state_text(region, output, state_max_tokens, source=source, previous=task.previous)


async def _one_state(
    summarizer: Summarizer,
    region: RegionPlan,
    task: SummaryTask,
    state_max_tokens: int,
    ranked: Callable[[], Awaitable[RegionPlan]] | None,
) -> RegionText:
    """One state call, retried once when its answer is not a usable state (``check_state``);
    a second bad answer fails the pass."""
    output = await summarizer.summarize(task)  # a failed call fails the pass (no retry here)
    if ranked is not None:
        region = await ranked()
    try:
        return checked_state(region, task, output, state_max_tokens)
    except ProviderError as exc:
        log.info("state answer rejected (%s): asking once more", exc)
    return checked_state(region, task, await summarizer.summarize(task), state_max_tokens)
