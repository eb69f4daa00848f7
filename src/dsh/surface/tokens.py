"""The token heuristic: about four characters a token, plus fixed overheads.

It is deliberately simple and deterministic so that compaction pricing (``shadowedTokenCount``)
can be recomputed exactly from the log by anyone (docs/architecture.md, "Token accounting").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh.events import (
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    encode_json,
)

BLOCK_OVERHEAD = 4
MESSAGE_OVERHEAD = 4


def text_tokens(text: str) -> int:
    """ceil(len/4) without floats."""
    return (len(text) + 3) // 4


def block_tokens(block: TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock) -> int:
    if isinstance(block, TextBlock | ReasoningBlock):
        return text_tokens(block.text) + BLOCK_OVERHEAD
    if isinstance(block, ToolCallBlock):
        return text_tokens(block.name) + text_tokens(block.arguments) + BLOCK_OVERHEAD
    return sum(block_tokens(inner) for inner in block.content) + BLOCK_OVERHEAD


def message_tokens(message: Message) -> int:
    """Heuristic size of one message as the model sees it."""
    return sum(block_tokens(b) for b in message.content) + MESSAGE_OVERHEAD


def system_tokens(system: str | None) -> int:
    return 0 if system is None else text_tokens(system) + BLOCK_OVERHEAD


def tools_tokens(tools: Sequence[dict[str, Any]] | None) -> int:
    if not tools:
        return 0
    return (len(encode_json(list(tools))) + 3) // 4 + BLOCK_OVERHEAD
