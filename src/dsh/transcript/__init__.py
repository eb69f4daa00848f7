"""The human projection of the log, and the plain-text renderer shared with the model side."""

from dsh.transcript.call_fold import OverLimitItem, UnrunCall, calls_by_name, over_limit_note
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
    logged_diff,
    project,
    transcript_items,
    transcript_tool_call_ids,
)
from dsh.transcript.render import COMPACTION_MARKER, cut_off_note, not_run_note, render_message
from dsh.transcript.text import (
    TRANSCRIPT_SEPARATOR,
    render_human_transcript,
    transcript_blocks,
)

__all__ = [
    "COMPACTION_MARKER",
    "TRANSCRIPT_SEPARATOR",
    "HistoryPage",
    "MarkerItem",
    "MessageItem",
    "NoteItem",
    "OverLimitItem",
    "PassDetails",
    "ToolCallItem",
    "ToolResultItem",
    "TranscriptItem",
    "TranscriptProjector",
    "UnrunCall",
    "calls_by_name",
    "cut_off_note",
    "history",
    "history_page",
    "logged_diff",
    "not_run_note",
    "over_limit_note",
    "project",
    "render_human_transcript",
    "render_markdown",
    "render_message",
    "transcript_blocks",
    "transcript_items",
    "transcript_tool_call_ids",
]
