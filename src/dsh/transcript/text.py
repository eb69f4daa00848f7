"""The human transcript as plain text (``dsh sessions show --view transcript``)."""

from __future__ import annotations

from collections.abc import Iterable

from dsh.events import Event
from dsh.transcript.projection import (
    MarkerItem,
    MessageItem,
    NoteItem,
    ToolResultItem,
    TranscriptItem,
    TranscriptProjector,
)
from dsh.transcript.render import COMPACTION_MARKER, cut_off_note, render_message


def render_item(item: TranscriptItem) -> str | None:
    """One item as text; tool calls are already lines of their assistant message."""
    if isinstance(item, MarkerItem):
        return COMPACTION_MARKER
    if isinstance(item, MessageItem):
        text = render_message(item.message)
        return text if item.cut_by is None else f"{text}\n{cut_off_note(item.cut_by)}"
    if isinstance(item, ToolResultItem):
        return f"Tool result (error): {item.text}" if item.is_error else f"Tool result: {item.text}"
    if isinstance(item, NoteItem):
        return f"({item.text})"
    return None


def render_human_transcript(events: Iterable[Event]) -> str:
    """The transcript people see of ``events`` (a log, in order), blocks apart by a blank line."""
    feed = TranscriptProjector().feed
    blocks = [render_item(item) for event in events for item in feed(event)]
    return "\n\n".join([block for block in blocks if block is not None])
