"""Classifying events by their own marks, in constant time (no fold needed)."""

from __future__ import annotations

from typing import TypeGuard

from dsh.events.messages import is_compact_checkpoint_source
from dsh.events.types import (
    AssistantMessageEvent,
    Event,
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


__all__ = [
    "is_append_surface_event",
    "is_checkpoint_event",
    "is_compact_checkpoint_source",
    "is_replacement_surface_event",
    "is_surface_event",
]
