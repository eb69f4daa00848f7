"""``EventsByType``: what hands out a log's events of one type without walking the log."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from dsh.events.types import EventBase

E = TypeVar("E", bound=EventBase)


class EventsByType(Protocol):
    """A log's events kept by exact type, each kind in log order, up to date with the log
    (``dsh.surface.Session.of_type``): a reader that needs a few kinds reads those lists (and
    bisects them by seq) instead of scanning every event."""

    def of_type(self, kind: type[E]) -> Sequence[E]:
        """The events whose type is exactly ``kind``, in log order (empty when none)."""
        ...
