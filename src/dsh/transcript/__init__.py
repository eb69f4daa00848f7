"""The human projection of the log, and the plain-text renderer shared with the model side."""

from dsh.transcript.history import HistoryPage, history, history_page
from dsh.transcript.markdown import render_markdown
from dsh.transcript.projection import (
    MarkerItem,
    MessageItem,
    NoteItem,
    PassDetails,
    ToolCallItem,
    ToolResultItem,
    TranscriptItem,
    TranscriptProjector,
    project,
    transcript_items,
    transcript_tool_call_ids,
)
from dsh.transcript.render import COMPACTION_MARKER, cut_off_note, render_message
from dsh.transcript.text import render_human_transcript

__all__ = [
    "COMPACTION_MARKER",
    "HistoryPage",
    "MarkerItem",
    "MessageItem",
    "NoteItem",
    "PassDetails",
    "ToolCallItem",
    "ToolResultItem",
    "TranscriptItem",
    "TranscriptProjector",
    "cut_off_note",
    "history",
    "history_page",
    "project",
    "render_human_transcript",
    "render_markdown",
    "render_message",
    "transcript_items",
    "transcript_tool_call_ids",
]
