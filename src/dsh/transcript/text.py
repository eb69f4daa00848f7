"""The human transcript as plain text (``dsh sessions show --view transcript``)."""

from __future__ import annotations

from collections.abc import Iterable

from dsh.events import Event
from dsh.transcript.projection import MarkerItem, transcript_items
from dsh.transcript.render import COMPACTION_MARKER, render_message


def render_human_transcript(events: Iterable[Event]) -> str:
    return "\n\n".join(
        COMPACTION_MARKER if isinstance(item, MarkerItem) else render_message(item.message)
        for item in transcript_items(events)
    )
