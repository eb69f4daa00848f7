"""Turn a provider's stream events into the assistant ``Message`` the loop logs.

Every provider (real or keyless) streams the same ``StreamEvent`` union; this is the one place
that folds it back into a message, so a message logged from a live stream, a scripted reply and
a replayed one are built by the same code.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from dsh.events import Message, ModelSource, ReasoningBlock, TextBlock, ToolCallBlock, Usage
from dsh.llm.errors import ErrorCode, provider_error
from dsh.llm.types import (
    Finish,
    FinishReason,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    TextWasReasoning,
    ToolCallDelta,
    UsageReport,
)

AssistantBlock = ReasoningBlock | TextBlock | ToolCallBlock

log = logging.getLogger("dsh.llm")


@dataclass
class _ReasoningParts:
    text: list[str] = field(default_factory=list)
    signature: str | None = None
    redacted: str | None = None


@dataclass(slots=True)
class _ToolCallParts:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


class StreamAssembler:
    """Accumulates stream events; ``message()`` builds the final assistant message.

    Blocks come out in a fixed order: reasoning, text, then tool calls sorted by index. A tool
    call's id and name are taken from the first delta that carries them; its argument pieces
    are concatenated. The last ``UsageReport`` and ``Finish`` win. A call whose id repeats an
    earlier call's in the same reply gets a unique one (``unique_call_ids``); one that came with
    no id (or ``""``) gets one made (``made_id``).
    """

    def __init__(self) -> None:
        self._reasoning: list[_ReasoningParts] = []
        self._text: list[str] = []
        self._calls: dict[int, _ToolCallParts] = {}
        self.usage: Usage | None = None
        self.finish: FinishReason | None = None
        self.output_limit: int | None = None
        """The bound the reply was cut at, when the provider reported one (``Finish``)."""
        self.text_calls: bool | None = None
        """Whether to read the reply's text as tool calls, when the provider says (``Finish``)."""
        self.text_calls_not_run: tuple[str, ...] | None = None
        """The text's calls not run, when the provider says (``Finish``: a replay)."""
        self.started = False
        """True once any event has arrived (after which the call is no longer retried)."""

    def feed(self, event: StreamEvent) -> None:
        """Take one stream event into account."""
        self.started = True
        if isinstance(event, TextDelta):
            self._text.append(event.text)
        elif isinstance(event, TextWasReasoning):  # a lone </think> closed it: reasoning
            moved = "".join(self._text).lstrip()
            self._text = []
            if moved:
                self._reasoning.insert(0, _ReasoningParts(text=[moved]))
        elif isinstance(event, ReasoningDelta):
            if event.new_block or not self._reasoning:
                self._reasoning.append(_ReasoningParts())
            thinking = self._reasoning[-1]
            thinking.text.append(event.text)
            thinking.signature = event.signature or thinking.signature
            thinking.redacted = event.redacted or thinking.redacted
        elif isinstance(event, ToolCallDelta):
            parts = self._calls.setdefault(event.index, _ToolCallParts())
            if parts.id is None and event.id:
                parts.id = event.id
            if parts.name is None and event.name is not None:
                parts.name = event.name
            parts.arguments.append(event.arguments)
        elif isinstance(event, UsageReport):
            self.usage = event.usage
        elif isinstance(event, Finish):
            self.finish = event.reason
            self.output_limit = event.output_limit
            self.text_calls = event.text_calls
            self.text_calls_not_run = event.text_calls_not_run

    def feed_all(self, events: Iterable[StreamEvent]) -> StreamAssembler:
        """Feed every event in order; returns ``self`` for chaining."""
        for event in events:
            self.feed(event)
        return self

    @property
    def text(self) -> str:
        """The text received so far."""
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        """The reasoning received so far."""
        return "".join(t for thinking in self._reasoning for t in thinking.text)

    def message(self, id: str, provider: str, model: str) -> Message:
        """The complete assistant message. A tool call that never got a name is an
        ``INVALID_RESPONSE`` provider error; one that never got an id gets one (``made_id``);
        malformed arguments are kept verbatim (docs/events.md, ToolCallBlock)."""
        calls = []
        for n, (index, parts) in enumerate(sorted(self._calls.items())):
            if parts.name is None:
                raise provider_error(
                    ErrorCode.INVALID_RESPONSE, f"tool call {index} of the stream has no name"
                )
            call_id = parts.id or made_id(id, n)
            calls.append(
                ToolCallBlock(id=call_id, name=parts.name, arguments="".join(parts.arguments))
            )
        return self._build(id, provider, model, calls)

    def partial_message(self, id: str, provider: str, model: str) -> Message:
        """The message of an interrupted stream: whatever text and reasoning arrived, plus only
        the tool calls that are complete (a name, and arguments that parse as JSON; a call
        without an id gets one, ``made_id``)."""
        calls = []
        for n, (_, parts) in enumerate(sorted(self._calls.items())):
            arguments = "".join(parts.arguments)
            if parts.name is None or not _is_json(arguments):
                continue
            calls.append(
                ToolCallBlock(id=parts.id or made_id(id, n), name=parts.name, arguments=arguments)
            )
        return self._build(id, provider, model, calls)

    def _build(self, id: str, provider: str, model: str, calls: list[ToolCallBlock]) -> Message:
        content: list[AssistantBlock] = []
        for thinking in self._reasoning:
            block = ReasoningBlock(
                text="".join(thinking.text),
                signature=thinking.signature,
                redacted=thinking.redacted,
            )
            if block.text or block.signature or block.redacted:
                content.append(block)
        if text := self.text:
            content.append(TextBlock(text=text))
        content.extend(unique_call_ids(calls))
        return Message(
            id=id,
            role="assistant",
            content=tuple(content),
            source=ModelSource(provider=provider, model=model),
        )


def made_id(message_id: str, n: int) -> str:
    """The id of call ``n`` of reply ``message_id`` when the server sent it none (results
    answer calls by id): ``{message_id}-call-{n}``, made unique among the reply's calls by
    ``unique_call_ids`` like any id; a warning says so."""
    made = f"{message_id}-call-{n}"
    log.warning("tool call %d of the reply came without an id; logged as %r", n, made)
    return made


def unique_call_ids(calls: list[ToolCallBlock]) -> list[ToolCallBlock]:
    """``calls`` with every repeated id made unique: a call whose id an earlier call of the
    reply has gets the first ``{id}_2``, ``{id}_3``, … no call of the reply has (a warning names
    both). Results answer calls by id, so two calls with one id cannot both be answered: every
    provider refuses a request whose results repeat an id (Anthropic also its tool_use ids)."""
    taken = {call.id for call in calls}
    seen: set[str] = set()
    out = []
    for index, call in enumerate(calls):
        if call.id in seen:
            n = 2
            while f"{call.id}_{n}" in taken:
                n += 1
            unique = f"{call.id}_{n}"
            log.warning(
                "tool call %d of the reply repeats the id %r of an earlier call; logged as %r",
                index,
                call.id,
                unique,
            )
            taken.add(unique)
            call = ToolCallBlock(id=unique, name=call.name, arguments=call.arguments)
        seen.add(call.id)
        out.append(call)
    return out


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
