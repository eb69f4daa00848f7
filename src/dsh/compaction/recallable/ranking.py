"""The part of a recallable plan that the summariser call does not need, done beside the call.

Ranking each stub's rarest literals (the session's anchor index brought up to date, then each
slice's anchors counted against it) and finding the values the span replaced is the pass's
main CPU work, O(the span) — and O(the log) on the first pass of a resumed session without a
stored index (``dsh.compaction.anchor_file``), which builds it; with one, that pass reads it.
The update stores what it added. None of it goes into the call: only the checkpoint texts
written from the answer use it. So the backend runs it in a worker thread while a model call is
out, and the pass costs about one call plus what little code runs before and after it. A
summariser that writes with code and reads the rarity counts (the extractive one) gets the
completed plan before its call, so its output stays a pure function of the log: the pass awaits
the same worker before the call, so the event loop of the TUI or of ``dsh web`` (every session
and page it serves) keeps running while the index is built (seconds for a 100,000-event log
without a stored index).

The work reads only what the plan captured (messages, and the event list's appended prefix,
which a thread may read while the loop appends), never the surface, which may move.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import msgspec

from dsh.compaction.anchors import rarest_anchors
from dsh.compaction.base import RegionPlan
from dsh.compaction.recallable.spans import SessionAnchors
from dsh.compaction.recallable.texts import slice_text, superseded_values
from dsh.events import Message
from dsh.surface import Session
from dsh.transcript import render_message


@dataclass(frozen=True, slots=True)
class Ranking:
    """What a plan leaves for later: the messages of each index region's slice (by region
    position; rollups and the state have none) and of the whole span."""

    session: Session
    anchors: SessionAnchors
    events: int
    """How many of the session's events the rarity counts cover (those logged at plan time)."""
    slices: dict[int, tuple[Message, ...]]
    span: tuple[Message, ...]
    previous: str | None = None
    """The pass-start state: a setting it names that the span changes is replaced too (a model
    merging it into the new state would otherwise carry the old value on unmarked)."""

    def complete(self, regions: Sequence[RegionPlan]) -> tuple[RegionPlan, ...]:
        """``regions`` with each index slice's rarest anchors and the span's replaced values."""
        index = self.anchors.update(self.session, self.events)
        texts = [render_message(m) for m in self.span]
        replaced = tuple(superseded_values([self.previous or "", *texts]).items())
        done = []
        for position, region in enumerate(regions):
            if region.code_text is not None:  # a rollup: written by code at plan time
                done.append(region)
                continue
            messages = self.slices.get(position)
            anchors = (
                ()
                if messages is None
                else tuple(rarest_anchors(slice_text(messages), counts=index.count))
            )
            done.append(msgspec.structs.replace(region, anchors=anchors, replaced=replaced))
        return tuple(done)


CompletedRegions = Callable[[], Awaitable[tuple[RegionPlan, ...]]]
"""Waits for a plan's regions with their ranking filled in (the same object every call)."""


def start_ranking(
    regions: tuple[RegionPlan, ...], ranking: Ranking | None
) -> tuple[CompletedRegions, Callable[[], Awaitable[None]]]:
    """Begin completing ``regions`` in a worker thread (never on the event loop: it is O(the
    log) on a first pass without a stored index). Returns the awaitable of the completed
    regions — awaited before the call by a summariser that reads the rarity counts, after it
    otherwise — and a ``settle`` that a pass ending with its texts or an error awaits, so its
    worker is done when it returns. A cancelled pass returns at once; its worker finishes on
    its own, and the anchor index's lock makes the next pass wait for it."""
    job: asyncio.Future[tuple[RegionPlan, ...]]
    if ranking is None:  # nothing to rank: the regions as planned
        job = asyncio.get_running_loop().create_future()
        job.set_result(regions)
    else:
        job = asyncio.ensure_future(asyncio.to_thread(ranking.complete, regions))

    async def later() -> tuple[RegionPlan, ...]:
        return await asyncio.shield(job)

    async def settle() -> None:
        await asyncio.gather(job, return_exceptions=True)

    return later, settle
