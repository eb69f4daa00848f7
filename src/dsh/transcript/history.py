"""History paging for people: pages of the log that hold ``max_messages`` messages.

Scanning backwards from ``before_seq``, only append-origin ``user/message`` and
``assistant/message`` events count (a checkpoint or a pruned copy is not something a person
wrote or read). At the N-th one the page is cut at min(its seq, its sourceEventSeqs), so the
chunks it cites stay with it, and the page is the contiguous run of ALL events from the cut —
log-only ones included, so a checkpoint's ``compaction/summary`` rides along with it
(docs/architecture.md, "The human transcript").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dsh.errors import UsageError
from dsh.events import (
    AssistantMessageEvent,
    CompactionStartEvent,
    Event,
    UserMessageEvent,
    is_append_surface_event,
    is_checkpoint_event,
)
from dsh.store import EventStore

DEFAULT_MAX_MESSAGES = 50


@dataclass(frozen=True, slots=True)
class HistoryPage:
    events: list[Event]
    has_more: bool
    """True when older events exist before this page (``cut > 0``)."""
    has_later: bool = False
    """True when newer events exist after this page (a window or a later page, not the end)."""

    @property
    def first_seq(self) -> int | None:
        return self.events[0].seq if self.events else None


def history_page(
    events: Sequence[Event], before_seq: int | None = None, max_messages: int = DEFAULT_MAX_MESSAGES
) -> HistoryPage:
    """The page of ``events`` ending just before ``before_seq`` (the newest page if None)."""
    if max_messages < 1:
        raise UsageError("max_messages must be at least 1")
    end = len(events) if before_seq is None else max(0, min(before_seq, len(events)))
    counted = 0
    cut = 0
    for index in range(end - 1, -1, -1):
        event = events[index]
        if isinstance(event, UserMessageEvent | AssistantMessageEvent) and is_append_surface_event(
            event
        ):
            counted += 1
            if counted == max_messages:
                sources = event.source_event_seqs or ()
                cut = min((event.seq, *sources))
                break
    return HistoryPage(events=list(events[cut:end]), has_more=cut > 0)


def _counted(event: Event) -> bool:
    return isinstance(event, UserMessageEvent | AssistantMessageEvent) and is_append_surface_event(
        event
    )


def later_page(
    events: Sequence[Event], after_seq: int, max_messages: int = DEFAULT_MAX_MESSAGES
) -> HistoryPage:
    """The page of ``events`` starting just after ``after_seq``: every event up to the
    ``max_messages + 1``-th message (a message's tool cards and notes stay with it)."""
    if max_messages < 1:
        raise UsageError("max_messages must be at least 1")
    start = max(0, min(after_seq + 1, len(events)))
    counted = 0
    for index in range(start, len(events)):
        if _counted(events[index]):
            counted += 1
            if counted > max_messages:
                return HistoryPage(list(events[start:index]), start > 0, has_later=True)
    return HistoryPage(list(events[start:]), start > 0)


def window_page(
    events: Sequence[Event], around_seq: int, max_messages: int = DEFAULT_MAX_MESSAGES
) -> HistoryPage:
    """A page of about ``max_messages`` messages around the event ``around_seq`` (half before
    it, half after), for a jump to it (find): ``has_more`` and ``has_later`` say whether older
    and newer events lie outside it. A compaction pass's checkpoint brings the pass's start and
    summaries with it (its marker's details)."""
    if max_messages < 1:
        raise UsageError("max_messages must be at least 1")
    if not events:
        return HistoryPage([], False)
    target = max(0, min(around_seq, len(events) - 1))
    before = max(1, max_messages // 2)
    older = history_page(events, target + 1, before)
    cut = older.first_seq if older.first_seq is not None else target
    event = events[target]
    if is_checkpoint_event(event):
        starts = [
            seq
            for seq in event.source_event_seqs or ()
            if 0 <= seq < target and isinstance(events[seq], CompactionStartEvent)
        ]
        cut = min((cut, *starts))
    newer = later_page(events, target, max(1, max_messages - before))
    return HistoryPage([*events[cut : target + 1], *newer.events], cut > 0, newer.has_later)


def history(
    store: EventStore,
    session_id: str,
    before_seq: int | None = None,
    max_messages: int = DEFAULT_MAX_MESSAGES,
) -> HistoryPage:
    """``history(sessionId, beforeSeq?, maxMessages=50)`` over a stored session (read-only)."""
    log = store.open(session_id)
    try:
        return history_page(log.events, before_seq, max_messages)
    finally:
        log.close()
