"""Plain-text rendering of messages: ``User:`` / ``Assistant:`` / ``Tool result:``.

One renderer serves the summariser input, the recall tools, the CLI views and exports, so the
model and people read the same words for the same events. Reasoning is not rendered: it is the
model's scratch work, not part of the conversation.
"""

from __future__ import annotations

from dsh.events import Message, TextBlock, ToolCallBlock, ToolResultBlock

COMPACTION_MARKER = "… earlier context was compacted …"
"""The one dim line people see where a compaction pass landed (spec §6)."""


def cut_off_note(code: str) -> str:
    """The mark under an assistant message that a provider failure (``code``) cut short."""
    return f"(the reply was cut off: {code})"


def render_message(message: Message, *, label: str | None = None) -> str:
    """Render one message; ``label`` (e.g. ``[index checkpoint]``) replaces the role prefix."""
    if label is not None:
        return f"{label}\n{message.text()}"
    if message.role == "assistant":
        parts = []
        text = message.text()
        if text:
            parts.append(text)
        parts.extend(f"[tool call: {c.name}({c.arguments})]" for c in message.tool_calls())
        return "Assistant: " + "\n".join(parts)
    if message.role == "tool":
        return "\n".join(_render_tool_result(b) for b in message.content)
    prefix = "System" if message.role == "system" else "User"
    return f"{prefix}: {message.text()}"


def _render_tool_result(block: object) -> str:
    if isinstance(block, ToolResultBlock):
        text = "".join(inner.text for inner in block.content)
        return f"Tool result (error): {text}" if block.is_error else f"Tool result: {text}"
    if isinstance(block, TextBlock):
        return f"Tool result: {block.text}"
    if isinstance(block, ToolCallBlock):
        return f"[tool call: {block.name}({block.arguments})]"
    return ""
