"""The provider seam: one request type, one stream-event union, one small protocol.

Everything above ``dsh.llm`` speaks these types; wire formats (OpenAI chat completions,
Anthropic Messages) exist only inside the adapter modules of this package.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from dsh.events import Event, Message, Usage

Purpose = Literal["conversation", "compaction"]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Exactly what is sent: the logged header (system, tools, config) plus derived messages.

    ``tools`` are JSON-schema tool specs ``{"name", "description", "parameters"}`` exactly as
    logged in ``request/header``; adapters translate them to their wire shape.
    """

    provider: str
    model: str
    system: str | None
    tools: tuple[dict[str, Any], ...]
    messages: tuple[Message, ...]
    params: dict[str, Any] = field(default_factory=dict)
    purpose: Purpose = "conversation"
    answers: int = 1
    """How many checkpoints a compaction call answers: more than one for a pass answered in
    one call (sections per checkpoint). Adapters ignore it; the replay provider reads it."""


# ---- stream events --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str
    provisional: bool = field(default=False, compare=False)
    """A lone ``</think>`` may yet make this text reasoning (``TextWasReasoning``): the
    splitter has not decided (``dsh.llm.stream_repair.ThinkSplitter``). A face that cannot take
    text back holds it (``dsh.cli.held_text``); one that can shows it and moves it if told. Not
    compared: the text is the same text, decided or not."""


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str
    signature: str | None = None
    """The signature of the reasoning block this delta belongs to (Anthropic)."""
    redacted: str | None = None
    """The opaque data of a redacted reasoning block (Anthropic ``redacted_thinking``)."""
    new_block: bool = False
    """This delta opens a new reasoning block (Anthropic sends several per message)."""


@dataclass(frozen=True, slots=True)
class TextWasReasoning:
    """All the text this reply has streamed so far was reasoning: a lone ``</think>`` closed it
    (``dsh.llm.stream_repair.ThinkSplitter``). The reply's message keeps it as reasoning; a
    live view that showed it as text may move it."""


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of tool call ``index``; ``id`` and ``name`` arrive once, arguments in pieces."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class UsageReport:
    usage: Usage


FinishReason = Literal["stop", "tool-calls", "max-tokens", "filtered"]
"""``filtered``: the provider stopped the reply itself (a content filter, a refusal); what was
streamed is kept, but the reply is not a complete answer."""
FILTERED_REPLY = "the provider stopped the reply (content filter or refusal)"
"""The error a turn ends with when its reply finished ``filtered``."""
CUT_REPLY = "your reply was cut at the output-token limit"
"""Named in the ``NOT_RUN`` result of each tool call of a reply that finished ``max-tokens``
(its arguments may be cut, so it is not run); the replay provider finds such replies by it."""
TEXT_CALLS_NOTICE = "text-tool-calls"
"""The plugin (``PluginSource``) of the ``user/message`` that tells the model which calls it
wrote as text were not run, or that its reply, a call written as text, could not be run (id
``{reply}-unread``: the replay provider reads such a reply's text as calls again)."""

CUT_CALL_NOTICE = "output-limit"
"""The plugin (``PluginSource``) of the ``user/message`` that tells the model its reply was cut
at the output limit while it wrote a tool call as text that no longer parses (so nothing ran);
the replay provider finds such replies by it."""


@dataclass(frozen=True, slots=True)
class Finish:
    reason: FinishReason
    output_limit: int | None = None
    """The output-token bound a ``max-tokens`` reply was cut at, when the provider knows it
    apart from the request's ``max_tokens``: the replay provider reports the recorded request's
    (its own requests carry none), so a replayed cut names the same figure."""
    text_calls: bool | None = None
    """Whether the reply's text is to be read as tool calls: the replay provider says what the
    log did (a log recorded under other recovery rules replays as it ran); None: the loop
    decides (``provider.text_tool_calls``)."""
    text_calls_not_run: tuple[str, ...] | None = None
    """The calls written in the reply's text that were not run, as the replay provider says the
    log recorded them (``textCallsNotRun``: a log from before they were named replays without);
    None: the loop reads them in the text."""


StreamEvent = TextDelta | ReasoningDelta | TextWasReasoning | ToolCallDelta | UsageReport | Finish


class Provider(Protocol):
    """A model endpoint. ``history`` is the session log so far (keyless providers count model
    calls in it; real providers ignore it). Failures raise ``dsh.errors.ProviderError``."""

    name: str

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]: ...
