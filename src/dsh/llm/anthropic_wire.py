"""The Anthropic Messages API's wire shape, without the SDK.

System as a parameter, strictly alternating roles (same-role neighbours merged), tool results
inside user messages, thinking sent back with its signature, and prompt-cache breakpoints: the
end of the frozen stub region and the last block of the last message (the provider adds one on
the system block), so each call reads the previous call's prefix from cache and a compaction
pass re-reads the unchanged stubs. Apart from the adapter (``dsh.llm.anthropic``) the bench's
cache trace lays requests out with it, without importing the SDK (2-3 s of ``dsh bench``'s
silent start on a loaded 2-core machine, against 0.8-1 s for the rest of it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from dsh.events import (
    Message,
    ModelSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    is_compact_checkpoint_source,
)
from dsh.llm.anthropic_models import thinking_in_blocks_between_tools

CACHE_BREAKPOINT = {"type": "ephemeral"}
"""A prompt-cache breakpoint (at most four per request)."""


def tool_to_wire(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A logged tool spec ``{name, description, parameters}`` as a Messages API tool."""
    return {
        "name": tool["name"],
        "description": tool.get("description", ""),
        "input_schema": tool.get("parameters", {"type": "object", "properties": {}}),
    }


def to_wire_messages(messages: Sequence[Message], *, model: str | None = None) -> list[Any]:
    """Messages API ``messages``: same-role neighbours merged, a cache breakpoint at the end,
    and one at the end of the frozen stub region (``stub_region_end``), so after a compaction
    pass the stubs are read from cache instead of written again. With the system block that
    makes at most three breakpoints (the API allows four). Given the ``model`` called, Claude
    Sonnet 5.5 or later, the thinking another model wrote is not sent (it binds a thinking
    block to the model that wrote it, and refuses another's)."""
    wire: list[dict[str, Any]] = []
    stubs_end = stub_region_end(messages)
    marked: tuple[int, int] | None = None
    for index, message in enumerate(messages):
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks_to_wire(message, _thinking_kept(message, model))
        if not blocks:
            continue  # the API rejects empty content (e.g. a reply that was only reasoning)
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
        if index == stubs_end:
            marked = (len(wire) - 1, len(wire[-1]["content"]) - 1)
    if marked is not None:
        content = wire[marked[0]]["content"]
        content[marked[1]] = {**content[marked[1]], "cache_control": CACHE_BREAKPOINT}
    if wire:
        last = wire[-1]["content"]
        last[-1] = {**last[-1], "cache_control": CACHE_BREAKPOINT}
    return wire


def stub_region_end(messages: Sequence[Message]) -> int | None:
    """Index of the last frozen stub: the checkpoints at the head are ``[stub…][state]``, so it
    is the one before the last of that run (None with fewer than two checkpoints there)."""
    run = 0
    while run < len(messages) and is_compact_checkpoint_source(messages[run].source):
        run += 1
    return run - 2 if run >= 2 else None


def _thinking_kept(message: Message, model: str | None) -> bool:
    """Whether ``message``'s thinking goes back to ``model``: not when another model wrote it."""
    source = message.source
    if model is None or not thinking_in_blocks_between_tools(model):
        return True
    return not isinstance(source, ModelSource) or source.model == model


def _blocks_to_wire(message: Message, thinking: bool = True) -> list[dict[str, Any]]:
    # Thinking goes back as it came, signature intact (the API checks it); reasoning without a
    # signature (another provider's, or a stream cut before the signature) is not sent.
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ReasoningBlock) and not thinking:
            continue
        if isinstance(block, ReasoningBlock) and block.redacted:
            blocks.append({"type": "redacted_thinking", "data": block.redacted})
        elif isinstance(block, ReasoningBlock) and block.signature:
            blocks.append(
                {"type": "thinking", "thinking": block.text, "signature": block.signature}
            )
        elif isinstance(block, TextBlock) and block.text:
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolCallBlock):
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": _input(block)}
            )
        elif isinstance(block, ToolResultBlock):
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_call_id}
            content = [{"type": "text", "text": t.text} for t in block.content if t.text]
            if content:
                result["content"] = content
            if block.is_error:
                result["is_error"] = True
            blocks.append(result)
    return blocks


def _input(call: ToolCallBlock) -> dict[str, Any]:
    try:
        parsed = json.loads(call.arguments)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
