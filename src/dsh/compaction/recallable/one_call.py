"""One call per pass: every stub and the state together.

The pass asks for all of its model regions in ONE call and the answer comes back in labelled
sections (``=== stub 1 ===`` … ``=== state ===``) that code splits and checks part by part,
exactly as it checks the answer of a call of its own: a stub section that is missing or junk
degrades only that stub to a code pointer stub; a state section that is not a usable state is
asked for once more in a call of its own. When the summariser is the conversation's own route
the call rides its cache (the conversation as sent, then one instruction naming each stub's
slice and the state's span); with a different summariser model it is compact: the context the
stubs share (the pass-start state, committed keyword lines, recent stubs), the span once, and
the same instruction — the span is sent once, not once per stub and once more for the state.
When the one answer would not fit (the summariser's output bound, or the room the call leaves
in the window) the pass takes the fewest calls that fit, consecutive parts in order; it is
written call by call when one region's answer alone would not fit, when its parts do not share
one layout, or when a call fails (docs/compaction.md, "Summariser calls ride the conversation's
cache").
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence

import msgspec

from dsh.compaction.base import RegionPlan, RegionText
from dsh.compaction.model_summarizer import compact_lead
from dsh.compaction.prompts import context_for, pass_labels, split_pass_answer
from dsh.compaction.recallable.ranking import CompletedRegions
from dsh.compaction.recallable.state_input import checked_state, request_tokens
from dsh.compaction.recallable.texts import junk_reason, pointer, stub_text
from dsh.compaction.summarizer import Summarizer, SummaryOutput, SummaryTask, output_bound
from dsh.errors import ProviderError

log = logging.getLogger("dsh.compaction")

StateFallback = Callable[[RegionPlan], Awaitable[RegionText]]


async def answer_pass(
    summarizer: Summarizer,
    regions: Sequence[RegionPlan],
    *,
    stub_tokens: int,
    state_tokens: int,
    window: int | None,
    state: StateFallback,
    completed: CompletedRegions,
) -> dict[int, RegionText]:
    """The text of the pass's model regions (by index in ``regions``) from one call — or from
    the fewest calls whose answers fit, in order, when one would not (``pass_batches``); empty
    when the pass is written call by call. A batch whose call fails leaves its regions out (the
    caller writes them call by call). Each answer is written into ``completed``'s regions (the
    plan's, ranked beside the call)."""
    batches = pass_batches(regions, window=window, max_output=output_bound(summarizer))
    answers = await asyncio.gather(
        *(
            answer_in_one_call(
                summarizer,
                _regions_of(completed, indexes),
                task,
                stub_tokens=stub_tokens,
                state_max_tokens=state_tokens,
                state_fallback=state,
            )
            for indexes, task in batches
        )
    )
    texts: dict[int, RegionText] = {}
    for (indexes, _), answer in zip(batches, answers, strict=True):
        for position, text in (answer or {}).items():
            texts[indexes[position]] = text
    return texts


def _regions_of(
    completed: CompletedRegions, indexes: Sequence[int]
) -> Callable[[], Awaitable[list[RegionPlan]]]:
    async def regions() -> list[RegionPlan]:
        done = await completed()
        return [done[i] for i in indexes]

    return regions


def pass_batches(
    regions: Sequence[RegionPlan], *, window: int | None, max_output: int | None
) -> list[tuple[tuple[int, ...], SummaryTask]]:
    """The pass calls for the model regions of a pass: ``(region indexes, task)`` per call,
    consecutive regions in order — one call when its answer fits, else the fewest that do.
    Empty (call by call) for fewer than two model regions, parts of both layouts, or a region
    whose answer alone would not fit. A part that shares its call with no other is written in
    a call of its own, and so is every part after it: a call for one checkpoint is always that
    checkpoint's own call, and the calls for several cover a run of the pass's first model
    regions (a replay tells them apart by that alone, ``dsh.llm.replay_passes``)."""
    model = [(index, r.task) for index, r in enumerate(regions) if r.task is not None]
    if len(model) < 2 or len({task.layout for _, task in model}) > 1:
        return []
    batches: list[tuple[tuple[int, ...], SummaryTask]] = []
    current: list[tuple[int, SummaryTask]] = []
    for item in model:
        grown = pass_task([t for _, t in [*current, item]], window=window, max_output=max_output)
        if grown is None and current:
            batches.append(_batch(current, window=window, max_output=max_output))
            current = []
            grown = pass_task([item[1]], window=window, max_output=max_output)
        if grown is None:
            return []
        current.append(item)
    batches.append(_batch(current, window=window, max_output=max_output))
    alone = next((n for n, (indexes, _) in enumerate(batches) if len(indexes) < 2), None)
    return batches[:alone]


def _batch(
    items: Sequence[tuple[int, SummaryTask]], *, window: int | None, max_output: int | None
) -> tuple[tuple[int, ...], SummaryTask]:
    task = pass_task([t for _, t in items], window=window, max_output=max_output)
    assert task is not None, "a batch is only closed once it fits"
    return tuple(index for index, _ in items), task


def pass_task(
    parts: Sequence[SummaryTask], *, window: int | None, max_output: int | None
) -> SummaryTask | None:
    """One call for ``parts`` (stub tasks, and the state task last if it is among them), or
    None when its answer — every part's budget — would not fit the summariser's output bound
    or the room the call, its instruction naming every slice included, leaves in the window
    (or, compact, when a part's slice is not where the call sends it)."""
    last = parts[-1]
    if last.layout == "riding":
        task: SummaryTask | None = SummaryTask(
            kind="pass",
            messages=(),
            max_tokens=sum(t.max_tokens for t in parts),
            system=last.system,
            tools=last.tools,
            rarity=last.rarity,
            layout="riding",
            conversation=last.conversation,
            parts=tuple(parts),
        )
    else:
        task = compact_pass_task(parts)
    if task is None:
        return None
    bounds = [] if max_output is None else [max_output]
    if window is not None:
        bounds.append(window - request_tokens(dataclasses.replace(task, max_tokens=0)))
    limit = min(bounds) if bounds else None
    if limit is not None and task.max_tokens > limit:
        return None
    return dataclasses.replace(task, output_limit=limit)


def compact_pass_task(parts: Sequence[SummaryTask]) -> SummaryTask | None:
    """The compact call for ``parts``: the context the stubs share (the first part's), then
    the span once — the state's messages when the state is among the parts (its span holds
    every stub's slice), else the stubs' slices in order — and each part naming its slice by
    position, counting the context as message #1. None when the parts do not share one
    context (or the state's merge base is not the stubs' background), or a stub's slice is
    not one run of the span."""
    first, last = parts[0], parts[-1]
    stubs = [p for p in parts if p.kind == "stub"]
    shared = {(p.background, p.keyword_lines, p.recent_stubs) for p in stubs}
    if len(shared) > 1 or (stubs and last.kind == "state" and last.previous != first.background):
        return None
    if last.kind == "state":
        messages = last.messages
    else:
        messages = tuple(m for p in parts for m in p.messages)
    lead = len(compact_lead(context_for(first), messages))
    ids = [m.id for m in messages]
    placed: list[SummaryTask] = []
    for part in parts:
        if not part.messages:
            return None
        at = 0 if part.kind == "state" else _run_at(ids, [m.id for m in part.messages])
        if at is None:
            return None
        placed.append(
            dataclasses.replace(
                part,
                slice_range=(lead + at + 1, lead + at + len(part.messages)),
                previous_at=1 if part.kind == "state" and part.previous else None,
            )
        )
    return SummaryTask(
        kind="pass",
        messages=messages,
        max_tokens=sum(t.max_tokens for t in parts),
        rarity=last.rarity,
        layout="compact",
        parts=tuple(placed),
    )


def _run_at(ids: list[str], run: list[str]) -> int | None:
    """Where ``run`` occurs in ``ids`` as one consecutive run (the first place), else None."""
    width = len(run)
    for start in range(len(ids) - width + 1):
        if ids[start] == run[0] and ids[start : start + width] == run:
            return start
    return None


async def answer_in_one_call(
    summarizer: Summarizer,
    planned: Callable[[], Awaitable[Sequence[RegionPlan]]],
    task: SummaryTask,
    *,
    stub_tokens: int,
    state_max_tokens: int,
    state_fallback: StateFallback,
) -> dict[int, RegionText] | None:
    """The checkpoint text of the ``planned`` regions (by position), whose tasks are ``task``'s
    parts, from one call for ``task``; None when the call fails. The regions are awaited only
    once the answer is in (their ranking runs beside the call). The call's usage and raw answer
    go on the first region, so a replay serves the one answer once."""
    try:
        output = await summarizer.summarize(task)
    except Exception as exc:
        log.info("a one-call pass failed (%s): writing its regions call by call", exc)
        return None
    regions = await planned()
    sections = split_pass_answer(output.text, pass_labels(task))
    texts: dict[int, RegionText] = {}
    for position, (region, label) in enumerate(zip(regions, pass_labels(task), strict=True)):
        part = SummaryOutput(
            text=sections.get(label, ""), provider=output.provider, model=output.model
        )
        if region.kind == "state":
            texts[position] = await _state(region, part, state_max_tokens, state_fallback)
        else:
            texts[position] = _stub(region, part, stub_tokens)
    texts[0] = msgspec.structs.replace(texts[0], usage=output.usage, raw_output=output.raw_output)
    return texts


def _stub(region: RegionPlan, part: SummaryOutput, stub_tokens: int) -> RegionText:
    """A stub from its section; a missing or junk section degrades to a pointer stub."""
    assert region.task is not None
    reason = junk_reason(part.text.strip(), region.task.messages, stub_tokens)
    if reason is None:
        return stub_text(region, part)
    log.info("stub section rejected (%s)", reason)
    return pointer(region, "fallback", None)


async def _state(
    region: RegionPlan, part: SummaryOutput, state_max_tokens: int, fallback: StateFallback
) -> RegionText:
    """The state from its section; one that is not a usable state is asked for in a call of
    its own (``fallback``), which may fail the pass."""
    assert region.task is not None
    try:
        return checked_state(region, region.task, part, state_max_tokens)
    except ProviderError as exc:
        log.info("state section rejected (%s): asking in a call of its own", exc)
    return await fallback(region)
