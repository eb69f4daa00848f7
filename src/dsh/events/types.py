"""The event vocabulary (docs/events.md is generated from it).

Each event is a frozen struct tagged by its ``type``; its payload lives in ``data``. Surface
events (``user/message``, ``assistant/message``, ``tool/result``) carry a required ``surfaceOp``
and optional ``sourceEventSeqs``; every other event has neither field, so a log-only event that
carries one is refused by the decoder itself.

To append, build the payload (``TurnStart(turn=1)``) and hand it to the session, which wraps it
in its event class (``event_class_for(payload)``) with the next seq and the current time.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any, Literal

import msgspec

from dsh.events.compaction_payloads import (
    CheckpointKind,
    CompactionEnd,
    CompactionPlan,
    CompactionPrune,
    CompactionStart,
    CompactionSummary,
    Degraded,
    Region,
    RegionText,
)
from dsh.events.messages import Message, Payload, Struct, Usage
from dsh.events.session_payloads import (
    NO_ROUTE,
    RecordedCompaction,
    SessionSettings,
    SessionTitle,
    SessionWorkspace,
)

# ---- envelope -------------------------------------------------------------------------------


class ReplaceOp(Struct, tag="replace", tag_field="op", frozen=True):
    """Splice surface nodes ``start``…``end`` (inclusive, by position) and insert this event."""

    start: int
    end: int


SurfaceOp = Literal["append"] | ReplaceOp
APPEND: Literal["append"] = "append"


class EventBase(Struct, tag_field="type", kw_only=True, frozen=True):
    """Envelope fields every event has. ``seq`` is the event's index in the log."""

    seq: Annotated[int, msgspec.Meta(ge=0)]
    time: Annotated[int, msgspec.Meta(ge=0)]
    """Epoch milliseconds."""
    ignorable: bool = False


# ---- payloads -------------------------------------------------------------------------------


class TurnStart(Payload["TurnStartEvent"], frozen=True):
    turn: int


TurnEndKind = Literal[
    "completed", "aborted", "error", "max-tokens", "interrupted", "max-steps", "repeated-calls"
]
"""How a turn ended: ``completed``; ``aborted`` (cancelled: by the user, a signal, a closed
output); ``error`` (a provider or dsh failure); ``max-tokens`` (a reply cut at the output
limit); ``interrupted`` (the process ended mid-turn: closed on repair); ``max-steps`` (it took
the steps the face allows, ``dsh run --max-steps``); ``repeated-calls`` (the same read-only
tool call with the same result too often, ``tools.max_repeated_calls``). A log an older dsh
wrote ended the last two ``aborted``."""


class TurnEndReason(Struct, frozen=True):
    kind: TurnEndKind
    error: str | None = None


class TurnEnd(Payload["TurnEndEvent"], frozen=True):
    turn: int
    reason: TurnEndReason


class StepStart(Payload["StepStartEvent"], frozen=True):
    turn: int
    step: int


class StepEnd(Payload["StepEndEvent"], frozen=True):
    turn: int
    step: int


class StreamChunk(Struct, frozen=True):
    """One streamed delta. ``index`` numbers tool calls within the message."""

    type: Literal["text", "reasoning", "tool-call"]
    delta: str
    index: int | None = None
    id: str | None = None
    name: str | None = None


class AssistantChunk(Payload["AssistantChunkEvent"], frozen=True):
    turn: int
    step: int
    chunk: StreamChunk


class AssistantMessage(Payload["AssistantMessageEvent"], frozen=True):
    """``interrupted``: the stream was cut (Ctrl-C, or a provider failure whose code is
    ``errorCode``; its ``request/error`` comes just before; ``PROCESS_ENDED``: dsh was killed
    mid-stream and the next open logged what had streamed, from the call's live side file).
    ``recoveredFromText``: the reply text the message's tool calls were recovered from
    (``provider.text_tool_calls``).
    ``textCallsNotRun``: the tool names of the calls the reply wrote in its text that were not
    run (a write, a command or an MCP call inside prose; docs/local-models.md), in order."""

    turn: int
    step: int
    message: Message
    usage: Usage | None = None
    interrupted: bool = False
    error_code: str | None = None
    recovered_from_text: str | None = None
    text_calls_not_run: tuple[str, ...] = ()


class ToolCall(Payload["ToolCallEvent"], frozen=True):
    """``fromText``: the model wrote this call as text and dsh recovered it. ``overLimit``:
    the reply asked for more calls than ``tools.max_calls_per_reply`` and this one is past
    that limit (its value): it is never run, and its result says ``TOO_MANY_CALLS``; the
    person-facing transcripts fold such calls of a reply into one card."""

    turn: int
    step: int
    call_id: str
    name: str
    arguments: str
    from_text: bool = False
    over_limit: Annotated[int, msgspec.Meta(ge=0)] = 0


class ToolErrorInfo(Struct, frozen=True):
    name: str
    code: str


class ToolResult(Payload["ToolResultEvent"], frozen=True):
    turn: int
    step: int
    message: Message
    error: ToolErrorInfo | None = None
    meta: dict[str, Any] | None = None


class RequestConfig(Struct, frozen=True):
    provider: str
    model: str
    params: dict[str, Any] | None = None


class RequestHeaderBody(Struct, frozen=True):
    config: RequestConfig
    system: str | None = None
    tools: tuple[dict[str, Any], ...] | None = None


class RequestHeader(Payload["RequestHeaderEvent"], frozen=True):
    header: RequestHeaderBody
    reason: Literal["initial", "resume", "change"]


class RequestContext(Payload["RequestContextEvent"], frozen=True):
    provider: str
    model: str
    context_window: int | None = None


class RequestError(Payload["RequestErrorEvent"], frozen=True):
    turn: int
    step: int
    code: str
    message: str
    retryable: bool


class LlmRetry(Payload["LlmRetryEvent"], frozen=True):
    """A retried model call (written with ``ignorable: true``)."""

    turn: int
    step: int
    attempt: int
    code: str
    message: str
    delay_ms: int


class SessionEndSeed(Payload["SessionEndSeedEvent"], frozen=True):
    """First write of a resumed lifecycle; older unmatched compaction starts are dead."""


class Todo(Struct, frozen=True):
    content: str
    status: Literal["pending", "in_progress", "completed"]


class TodoWrite(Payload["TodoWriteEvent"], frozen=True):
    todos: tuple[Todo, ...]


class CommandRun(Payload["CommandRunEvent"], frozen=True):
    command_id: str
    name: str
    args: str = ""


class CommandDone(Payload["CommandDoneEvent"], frozen=True):
    command_id: str
    ok: bool
    text: str
    source_event_seq: int | None = None


# ---- events ---------------------------------------------------------------------------------


class TurnStartEvent(EventBase, tag="turn/start", kw_only=True, frozen=True):
    data: TurnStart


class TurnEndEvent(EventBase, tag="turn/end", kw_only=True, frozen=True):
    data: TurnEnd


class StepStartEvent(EventBase, tag="step/start", kw_only=True, frozen=True):
    data: StepStart


class StepEndEvent(EventBase, tag="step/end", kw_only=True, frozen=True):
    data: StepEnd


class UserMessageEvent(EventBase, tag="user/message", kw_only=True, frozen=True):
    data: Message
    surface_op: SurfaceOp
    source_event_seqs: tuple[int, ...] | None = None


class AssistantChunkEvent(EventBase, tag="assistant/chunk", kw_only=True, frozen=True):
    data: AssistantChunk


class AssistantMessageEvent(EventBase, tag="assistant/message", kw_only=True, frozen=True):
    data: AssistantMessage
    surface_op: SurfaceOp
    source_event_seqs: tuple[int, ...] | None = None


class ToolCallEvent(EventBase, tag="tool/call", kw_only=True, frozen=True):
    data: ToolCall


class ToolResultEvent(EventBase, tag="tool/result", kw_only=True, frozen=True):
    data: ToolResult
    surface_op: SurfaceOp
    source_event_seqs: tuple[int, ...] | None = None


class RequestHeaderEvent(EventBase, tag="request/header", kw_only=True, frozen=True):
    data: RequestHeader


class RequestContextEvent(EventBase, tag="request/context", kw_only=True, frozen=True):
    data: RequestContext


class RequestErrorEvent(EventBase, tag="request/error", kw_only=True, frozen=True):
    data: RequestError


class LlmRetryEvent(EventBase, tag="llm/retry", kw_only=True, frozen=True):
    data: LlmRetry


class SessionEndSeedEvent(EventBase, tag="session/end-seed", kw_only=True, frozen=True):
    data: SessionEndSeed


class SessionWorkspaceEvent(EventBase, tag="session/workspace", kw_only=True, frozen=True):
    data: SessionWorkspace


class SessionSettingsEvent(EventBase, tag="session/settings", kw_only=True, frozen=True):
    data: SessionSettings


class SessionTitleEvent(EventBase, tag="session/title", kw_only=True, frozen=True):
    data: SessionTitle


class TodoWriteEvent(EventBase, tag="todo/write", kw_only=True, frozen=True):
    data: TodoWrite


class CommandRunEvent(EventBase, tag="command/run", kw_only=True, frozen=True):
    data: CommandRun


class CommandDoneEvent(EventBase, tag="command/done", kw_only=True, frozen=True):
    data: CommandDone


class CompactionStartEvent(EventBase, tag="compaction/start", kw_only=True, frozen=True):
    data: CompactionStart


class CompactionSummaryEvent(EventBase, tag="compaction/summary", kw_only=True, frozen=True):
    data: CompactionSummary


class CompactionEndEvent(EventBase, tag="compaction/end", kw_only=True, frozen=True):
    data: CompactionEnd


class CompactionPlanEvent(EventBase, tag="compaction/plan", kw_only=True, frozen=True):
    data: CompactionPlan


class CompactionPruneEvent(EventBase, tag="compaction/prune", kw_only=True, frozen=True):
    data: CompactionPrune


KnownEvent = (
    TurnStartEvent
    | TurnEndEvent
    | StepStartEvent
    | StepEndEvent
    | UserMessageEvent
    | AssistantChunkEvent
    | AssistantMessageEvent
    | ToolCallEvent
    | ToolResultEvent
    | RequestHeaderEvent
    | RequestContextEvent
    | RequestErrorEvent
    | LlmRetryEvent
    | SessionEndSeedEvent
    | SessionWorkspaceEvent
    | SessionSettingsEvent
    | SessionTitleEvent
    | TodoWriteEvent
    | CommandRunEvent
    | CommandDoneEvent
    | CompactionStartEvent
    | CompactionSummaryEvent
    | CompactionEndEvent
    | CompactionPlanEvent
    | CompactionPruneEvent
)

KNOWN_EVENT_CLASSES: tuple[type[KnownEvent], ...] = KnownEvent.__args__


class OpaqueEvent(msgspec.Struct, frozen=True):
    """An event of a type this version does not know, marked ignorable.

    It keeps its seq (the log stays contiguous), is re-saved byte for byte from ``raw``, and every
    projection ignores it.
    """

    type: str
    seq: int
    time: int
    raw: bytes

    @property
    def ignorable(self) -> bool:
        return True


Event = KnownEvent | OpaqueEvent
SurfaceEvent = UserMessageEvent | AssistantMessageEvent | ToolResultEvent
SURFACE_EVENT_CLASSES = (UserMessageEvent, AssistantMessageEvent, ToolResultEvent)

EVENT_CLASS_BY_PAYLOAD: dict[type, type[KnownEvent]] = {
    typing.get_type_hints(cls)["data"]: cls for cls in KNOWN_EVENT_CLASSES
}
EVENT_CLASS_BY_TYPE: dict[str, type[EventBase]] = {
    cls.__struct_config__.tag: cls  # type: ignore[misc]
    for cls in KNOWN_EVENT_CLASSES
}


def event_type_name(cls: type[EventBase]) -> str:
    """The on-disk ``type`` tag of an event class."""
    tag = cls.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


__all__ = [
    "APPEND",
    "EVENT_CLASS_BY_PAYLOAD",
    "EVENT_CLASS_BY_TYPE",
    "KNOWN_EVENT_CLASSES",
    "NO_ROUTE",
    "SURFACE_EVENT_CLASSES",
    "AssistantChunk",
    "AssistantChunkEvent",
    "AssistantMessage",
    "AssistantMessageEvent",
    "CheckpointKind",
    "CommandDone",
    "CommandDoneEvent",
    "CommandRun",
    "CommandRunEvent",
    "CompactionEnd",
    "CompactionEndEvent",
    "CompactionPlan",
    "CompactionPlanEvent",
    "CompactionPrune",
    "CompactionPruneEvent",
    "CompactionStart",
    "CompactionStartEvent",
    "CompactionSummary",
    "CompactionSummaryEvent",
    "Degraded",
    "Event",
    "EventBase",
    "KnownEvent",
    "LlmRetry",
    "LlmRetryEvent",
    "OpaqueEvent",
    "Payload",
    "RecordedCompaction",
    "Region",
    "RegionText",
    "ReplaceOp",
    "RequestConfig",
    "RequestContext",
    "RequestContextEvent",
    "RequestError",
    "RequestErrorEvent",
    "RequestHeader",
    "RequestHeaderBody",
    "RequestHeaderEvent",
    "SessionEndSeed",
    "SessionEndSeedEvent",
    "SessionSettings",
    "SessionSettingsEvent",
    "SessionTitle",
    "SessionTitleEvent",
    "SessionWorkspace",
    "SessionWorkspaceEvent",
    "StepEnd",
    "StepEndEvent",
    "StepStart",
    "StepStartEvent",
    "StreamChunk",
    "SurfaceEvent",
    "SurfaceOp",
    "Todo",
    "TodoWrite",
    "TodoWriteEvent",
    "ToolCall",
    "ToolCallEvent",
    "ToolErrorInfo",
    "ToolResult",
    "ToolResultEvent",
    "TurnEnd",
    "TurnEndEvent",
    "TurnEndKind",
    "TurnEndReason",
    "TurnStart",
    "TurnStartEvent",
    "UserMessageEvent",
    "event_type_name",
]
