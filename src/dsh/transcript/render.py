"""Plain-text rendering of messages: ``User:`` / ``Assistant:`` / ``Tool result:``.

One renderer serves the summariser input, the recall tools, the CLI views and exports, so the
model and people read the same words for the same events. Reasoning is rendered on its own
labelled line, ``Assistant (reasoning): …``, before the answer: a fact the model stated only
while reasoning can be recalled, and is never mistaken for what it said.

One difference: a note dsh itself adds as a user turn (a plugin's ``user/message``: what
``dsh undo`` took back, the output-limit notice) is ``User: …`` to the model, whose user turn it
is, and ``Context from undo: …`` in the human transcript (``context_title``, as the TUI's
``context from undo`` and the web page's ``Injected context · undo``), so nobody reads it as
something the person typed. ``render_message`` is the model's side and never labels it so.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.errors import printable_line
from dsh.events import (
    Message,
    PluginSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

COMPACTION_MARKER = "… earlier context was compacted …"
"""The one dim line people see where a compaction pass landed (docs/architecture.md, "The human
transcript")."""


REASONING_LABEL = "Assistant (reasoning):"
"""The label of the model's reasoning wherever a message is rendered as text."""


def cut_off_note(code: str) -> str:
    """The mark under an assistant message that a provider failure (``code``) cut short."""
    return f"(the reply was cut off: {code})"


def not_run_note(names: Sequence[str]) -> str:
    """The line under a reply whose text held the tool calls ``names`` that were not run
    (``assistant/message``'s ``textCallsNotRun``: a write, a command or an MCP call a small model
    wrote inside prose; docs/local-models.md), the tool names each once."""
    count = len(names)
    calls = "1 tool call" if count == 1 else f"{count} tool calls"
    was, it = ("was", "it") if count == 1 else ("were", "them")
    shown = ", ".join(dict.fromkeys(names))
    return (
        f"{calls} written in the reply's text {was} not run ({shown}): the model wrote {it} as "
        "text instead of calling the tool"
    )


def injected_by(message: Message) -> str | None:
    """The plugin that added ``message`` when it is a note dsh gave the model as a user (or
    system) turn, not a person's prompt (``dsh undo``'s ``undo``, the ``output-limit`` notice,
    an imported session's plugins), else None."""
    source = message.source
    if type(source) is PluginSource and message.role in ("user", "system"):
        return source.plugin
    return None


def context_title(plugin: str) -> str:
    """How people see a note ``plugin`` added (``Context from undo``): one line, escaped (an
    imported log's plugin name is anyone's text)."""
    return f"Context from {printable_line(plugin)}"


def render_message(message: Message, *, label: str | None = None) -> str:
    """Render one message; ``label`` (e.g. ``[index checkpoint]``) replaces the role prefix."""
    if label is not None:
        return f"{label}\n{message.text()}"
    role = message.role
    if role == "assistant":  # one pass over the blocks: long logs render many thousands
        texts: list[str] = []
        parts: list[str] = []
        thoughts: list[str] = []
        for block in message.content:  # exact types: block classes are leaves
            if type(block) is TextBlock:
                texts.append(block.text)
            elif type(block) is ToolCallBlock:
                parts.append(f"[tool call: {block.name}({block.arguments})]")
            elif type(block) is ReasoningBlock:
                thoughts.append(block.text)
        text = "".join(texts)
        if text:
            parts.insert(0, text)
        said = "Assistant: " + "\n".join(parts)
        reasoning = "".join(thoughts)
        if not reasoning:
            return said
        return f"{REASONING_LABEL} {reasoning}" + (f"\n{said}" if parts else "")
    if role == "tool":
        return "\n".join([_render_tool_result(b) for b in message.content])
    prefix = "System" if role == "system" else "User"
    return f"{prefix}: {message.text()}"


def tool_result_line(text: str, *, is_error: bool) -> str:
    """A tool's result as people and the model read it."""
    return f"Tool result (error): {text}" if is_error else f"Tool result: {text}"


def _render_tool_result(block: object) -> str:
    if isinstance(block, ToolResultBlock):
        text = "".join([inner.text for inner in block.content])
        return tool_result_line(text, is_error=block.is_error)
    if isinstance(block, TextBlock):
        return f"Tool result: {block.text}"
    if isinstance(block, ToolCallBlock):
        return f"[tool call: {block.name}({block.arguments})]"
    return ""
