"""A provider serving canned stream events, and a check that a request is one every provider
takes: each assistant tool call answered exactly once by the results that follow it, with unique
ids, in the wire shape of the OpenAI-compatible adapter (also DeepSeek's) and of the Anthropic
adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from dsh.events import Event, ToolResultEvent
from dsh.llm import anthropic_wire, openai_compat
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.surface import Session


class Canned:
    """Serves the given replies in order, one per model call, and keeps every request."""

    name = "canned"

    def __init__(self, *replies: Sequence[StreamEvent]) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        for event in self.replies.pop(0):
            yield event


def of_type(session: Session, kind: type) -> list:
    return [e for e in session.events if isinstance(e, kind)]


def results(session: Session) -> list[tuple[str, str | None, str]]:
    """Each logged tool result as (toolCallId, error code or None, text)."""
    out = []
    for event in of_type(session, ToolResultEvent):
        block = event.data.message.content[0]
        code = event.data.error.code if event.data.error is not None else None
        out.append((block.tool_call_id, code, block.content[0].text))
    return out


def assert_pairs_on_the_wire(request: ModelRequest) -> None:
    """Raise AssertionError naming the first call or result that does not pair."""
    _check_openai(openai_compat.to_wire_messages(request, reasoning_back=True))
    _check_anthropic(anthropic_wire.to_wire_messages(request.messages))


def _check_openai(wire: list[dict[str, Any]]) -> None:
    waiting: list[str] = []
    for entry in wire:
        if entry["role"] == "tool":
            assert entry["tool_call_id"] in waiting, f"result without its call: {entry}"
            waiting.remove(entry["tool_call_id"])
            continue
        assert not waiting, f"calls without results before {entry['role']}: {waiting}"
        ids = [c["id"] for c in entry.get("tool_calls", ())]
        assert len(set(ids)) == len(ids), f"duplicate tool call ids: {ids}"
        waiting = ids


def _check_anthropic(wire: list[dict[str, Any]]) -> None:
    waiting: list[str] = []
    for entry in wire:
        blocks = entry["content"]
        answered = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        assert sorted(answered) == sorted(waiting), f"results {answered} for calls {waiting}"
        ids = [b["id"] for b in blocks if b["type"] == "tool_use"]
        assert len(set(ids)) == len(ids), f"duplicate tool_use ids: {ids}"
        waiting = ids
