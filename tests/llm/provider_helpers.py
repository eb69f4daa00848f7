"""Client-side helpers for the adapter tests: messages, requests, draining a stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsh.errors import ProviderError
from dsh.events import (
    Message,
    ModelSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSource,
    UserSource,
)
from dsh.llm.types import ModelRequest, StreamEvent, ToolCallDelta

SYSTEM = "You are a coding agent."
TOOLS = (
    {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
)


def user(text: str, id: str = "u1") -> Message:
    return Message(id=id, role="user", content=(TextBlock(text=text),), source=UserSource())


def assistant(
    text: str = "",
    *,
    reasoning: str | None = None,
    calls: tuple[tuple[str, str, str], ...] = (),
    id: str = "a1",
) -> Message:
    """An assistant message; ``calls`` are ``(id, name, arguments)``."""
    blocks: list[Any] = []
    if reasoning is not None:
        blocks.append(ReasoningBlock(text=reasoning))
    if text:
        blocks.append(TextBlock(text=text))
    blocks.extend(ToolCallBlock(id=c, name=n, arguments=a) for c, n, a in calls)
    return Message(
        id=id, role="assistant", content=tuple(blocks), source=ModelSource(provider="p", model="m")
    )


def tool_result(call_id: str, text: str, *, is_error: bool = False, id: str = "t1") -> Message:
    block = ToolResultBlock(
        tool_call_id=call_id, content=(TextBlock(text=text),), is_error=is_error
    )
    return Message(id=id, role="tool", content=(block,), source=ToolSource(call_id=call_id))


def make_request(
    *messages: Message,
    provider: str = "deepseek",
    model: str = "fake-model",
    system: str | None = SYSTEM,
    tools: tuple[dict[str, Any], ...] = TOOLS,
    params: dict[str, Any] | None = None,
) -> ModelRequest:
    return ModelRequest(
        provider=provider,
        model=model,
        system=system,
        tools=tools,
        messages=messages or (user("hello"),),
        params=params or {},
    )


def collect(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    """Drain an async stream of events."""

    async def drain() -> list[StreamEvent]:
        return [event async for event in stream]

    return asyncio.run(drain())


def collect_until_error(
    stream: AsyncIterator[StreamEvent],
) -> tuple[list[StreamEvent], ProviderError]:
    """Drain a stream that must fail; returns what came before the error, and the error."""
    seen: list[StreamEvent] = []

    async def drain() -> None:
        async for event in stream:
            seen.append(event)

    with pytest.raises(ProviderError) as info:
        asyncio.run(drain())
    return seen, info.value


def tool_calls(events: list[StreamEvent]) -> dict[int, tuple[str | None, str | None, str]]:
    """Reassemble tool-call deltas by index: ``{index: (id, name, arguments)}``."""
    calls: dict[int, tuple[str | None, str | None, str]] = {}
    for event in events:
        if isinstance(event, ToolCallDelta):
            id_, name, args = calls.get(event.index, (None, None, ""))
            calls[event.index] = (id_ or event.id, name or event.name, args + event.arguments)
    return calls
