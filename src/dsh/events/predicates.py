"""Classifying events by their own marks, in constant time (no fold needed)."""

from __future__ import annotations

from typing import TypeGuard

from dsh.events.messages import Message, is_compact_checkpoint_source
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


__all__ = [
    "is_append_surface_event",
    "is_checkpoint_event",
    "is_compact_checkpoint_source",
    "is_replacement_surface_event",
    "is_surface_event",
    "surface_message",
]
