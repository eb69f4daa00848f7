"""Markdown export of the human transcript (``dsh sessions export --format md``)."""

from __future__ import annotations

from collections.abc import Iterable

from dsh.events import Event, Message, ReasoningBlock, ToolResultBlock
from dsh.transcript.projection import (
    MarkerItem,
    MessageItem,
    NoteItem,
    ToolResultItem,
    transcript_items,
)
from dsh.transcript.render import COMPACTION_MARKER, context_title, cut_off_note, injected_by


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}"


def message_markdown(message: Message) -> str:
    if message.role == "assistant":
        parts = ["### Assistant"]
        reasoning = "".join(b.text for b in message.content if isinstance(b, ReasoningBlock))
        if reasoning:
            parts.append("\n".join(f"> {line}" for line in f"*Reasoning:* {reasoning}".split("\n")))
        if message.text():
            parts.append(message.text())
        parts.extend(
            f"**Tool call** `{c.name}`\n\n{_fence(c.arguments)}" for c in message.tool_calls()
        )
        return "\n\n".join(parts)
    if message.role == "tool":
        results = [b for b in message.content if isinstance(b, ToolResultBlock)]
        body = "".join(inner.text for block in results for inner in block.content)
        title = "### Tool result"
        if any(block.is_error for block in results):
            title += " (error)"
        return f"{title}\n\n{_fence(body)}"
    plugin = injected_by(message)
    title = "User" if plugin is None else context_title(plugin)
    return f"### {title}\n\n{message.text()}"


def render_markdown(session_id: str, events: Iterable[Event]) -> str:
    """The conversation as people saw it, one section per message, markers included."""
    out = [f"# dsh session {session_id}"]
    for item in transcript_items(events):
        if isinstance(item, MarkerItem):
            out.append(f"> {COMPACTION_MARKER}")
        elif isinstance(item, MessageItem):
            out.append(message_markdown(item.message))
            if item.cut_by is not None:
                out.append(f"*{cut_off_note(item.cut_by)}*")
        elif isinstance(item, ToolResultItem):
            title = "### Tool result (error)" if item.is_error else "### Tool result"
            out.append(f"{title}\n\n{_fence(item.text)}")
        elif isinstance(item, NoteItem):
            out.append(f"*{item.text}*")
    return "\n\n".join(out) + "\n"
