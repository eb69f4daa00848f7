"""The human projection of the log, and the plain-text renderer shared with the model side."""

from dsh.transcript.markdown import render_markdown
from dsh.transcript.projection import MarkerItem, MessageItem, TranscriptItem, transcript_items
from dsh.transcript.render import COMPACTION_MARKER, render_message, render_messages
from dsh.transcript.text import render_human_transcript

__all__ = [
    "COMPACTION_MARKER",
    "MarkerItem",
    "MessageItem",
    "TranscriptItem",
    "render_human_transcript",
    "render_markdown",
    "render_message",
    "render_messages",
    "transcript_items",
]
