"""What the agent loop reads from the whole log, kept up to date as the log grows."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.events import Event, RequestContext, RequestContextEvent, TurnStartEvent
from dsh.surface import Session


class LogScan:
    """What the loop reads from the whole log, kept up to date incrementally: the first update
    takes the session's per-type index (no scan of the log it opened), later ones look only at
    the events appended since (the log only grows)."""

    def __init__(self) -> None:
        self._events: Sequence[Event] | None = None
        self._seen = 0
        self.turns = 0
        """``turn/start`` events in the log."""
        self.route: RequestContext | None = None
        """The latest logged ``request/context``."""

    def update(self, session: Session) -> LogScan:
        events = session.events
        if events is not self._events or len(events) < self._seen:  # another log: start over
            contexts = session.of_type(RequestContextEvent)
            self._events, self._seen = events, len(events)
            self.turns = len(session.of_type(TurnStartEvent))
            self.route = contexts[-1].data if contexts else None
            return self
        for event in events[self._seen :]:
            if isinstance(event, TurnStartEvent):
                self.turns += 1
            elif isinstance(event, RequestContextEvent):
                self.route = event.data
        self._seen = len(events)
        return self
