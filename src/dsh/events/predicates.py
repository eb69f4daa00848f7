"""Classifying events by their own marks, in constant time (no fold needed)."""

from __future__ import annotations

from typing import TypeGuard

from msgspec.structs import replace

from dsh.events.messages import Message, TextBlock, is_compact_checkpoint_source
from dsh.events.types import (
    AssistantMessageEvent,
    Event,
    OpaqueEvent,
    ReplaceOp,
    SurfaceEvent,
    ToolResultEvent,
    UserMessageEvent,
)

_SURFACE = (UserMessageEvent, AssistantMessageEvent, ToolResultEvent)


def is_surface_event(event: Event) -> TypeGuard[SurfaceEvent]:
    """True for the three surface types, whatever their op."""
    return isinstance(event, _SURFACE)


def is_append_surface_event(event: Event) -> TypeGuard[SurfaceEvent]:
    """A surface event whose op is ``append``: an original, shown to people."""
    return isinstance(event, _SURFACE) and event.surface_op == "append"


def is_replacement_surface_event(event: Event) -> TypeGuard[SurfaceEvent]:
    """A surface event whose op is a replace: a model-only copy (checkpoint, pruned result…)."""
    return isinstance(event, _SURFACE) and isinstance(event.surface_op, ReplaceOp)


def is_checkpoint_event(event: Event) -> TypeGuard[UserMessageEvent]:
    """A replacement ``user/message`` whose source marks a compaction checkpoint."""
    return (
        isinstance(event, UserMessageEvent)
        and isinstance(event.surface_op, ReplaceOp)
        and is_compact_checkpoint_source(event.data.source)
    )


def surface_message(event: SurfaceEvent | OpaqueEvent) -> Message | None:
    """The message a surface event contributes to the model (None if it contributes none)."""
    if isinstance(event, UserMessageEvent):
        return event.data
    if isinstance(event, AssistantMessageEvent):
        return event.data.message if event.data.message.content else None
    if isinstance(event, ToolResultEvent):
        return event.data.message
    return None


STOPPED_BY_USER = "[This reply was cut off here: the user stopped it.]"
CUT_BY_PROCESS_END = "[This reply was cut off here: dsh was stopped while it streamed.]"
PROCESS_ENDED_CODE = "PROCESS_ENDED"


def interruption_note(error_code: str | None) -> str:
    """What the model reads after a reply of its own that was cut off (``error_code``: the
    ``assistant/message``'s ``errorCode``; None when the user stopped it)."""
    if error_code is None:
        return STOPPED_BY_USER
    if error_code == PROCESS_ENDED_CODE:
        return CUT_BY_PROCESS_END
    return f"[This reply was cut off here: the model server failed ({error_code}).]"


def model_message(event: SurfaceEvent | OpaqueEvent) -> Message | None:
    """The message a surface event contributes to the model's requests: ``surface_message``,
    except that an interrupted reply without tool calls ends with ``interruption_note`` (the
    results of a cut reply's calls already say they did not run), so the model does not take
    half an answer or half a plan for a finished one. The person's transcripts use
    ``surface_message`` and mark the cut their own way."""
    message = surface_message(event)
    if (
        message is None
        or not isinstance(event, AssistantMessageEvent)
        or not event.data.interrupted
        or message.tool_calls()
    ):
        return message
    note = interruption_note(event.data.error_code)
    text = f"\n\n{note}" if message.text() else note
    return replace(message, content=(*message.content, TextBlock(text)))


__all__ = [
    "interruption_note",
    "is_append_surface_event",
    "is_checkpoint_event",
    "is_compact_checkpoint_source",
    "is_replacement_surface_event",
    "is_surface_event",
    "model_message",
    "surface_message",
]
