"""The human projection (spec §6): original messages in log order, one marker per landed pass.

People see every append-origin surface event; a checkpoint shows no payload, only a marker at
the log position of its pass's first checkpoint; other replacements show nothing. Classification
uses the events' own marks (``surfaceOp`` and the checkpoint source), never a fold.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from dsh.events import (
    CompactionStartEvent,
    Event,
    Message,
    is_append_surface_event,
    is_checkpoint_event,
    surface_message,
)


@dataclass(frozen=True, slots=True)
class MessageItem:
    seq: int
    message: Message


@dataclass(frozen=True, slots=True)
class MarkerItem:
    """Where a compaction pass landed (the seq of its first checkpoint)."""

    seq: int
    pass_id: str


TranscriptItem = MessageItem | MarkerItem


def transcript_items(events: Iterable[Event]) -> Iterator[TranscriptItem]:
    pass_of: dict[str, str] = {}
    marked: set[str] = set()
    for event in events:
        if isinstance(event, CompactionStartEvent):
            pass_of[event.data.compaction_id] = event.data.pass_id or event.data.compaction_id
        elif is_checkpoint_event(event):
            compaction_id = getattr(event.data.source, "compaction_id", None) or f"#{event.seq}"
            pass_id = pass_of.get(compaction_id, compaction_id)
            if pass_id not in marked:
                marked.add(pass_id)
                yield MarkerItem(event.seq, pass_id)
        elif is_append_surface_event(event):
            message = surface_message(event)
            if message is not None:
                yield MessageItem(event.seq, message)
