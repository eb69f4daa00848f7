"""What a face follows in the log, one event at a time: the compaction pass that is
running, and the session's cache-hit ratio."""

from __future__ import annotations

from dsh.events import (
    AssistantMessageEvent,
    CompactionEndEvent,
    CompactionPlanEvent,
    CompactionStartEvent,
    Event,
    SessionEndSeedEvent,
)

_COMPACTION_TYPES = frozenset(
    {CompactionStartEvent, CompactionPlanEvent, CompactionEndEvent, SessionEndSeedEvent}
)


class CompactionProgress:
    """ "compacting…" after a ``compaction/start`` with no end; "compacting · k of N regions"
    once the pass's ``compaction/plan`` (N regions) arrived, k = its committed ``compaction/end``s.
    """

    def __init__(self) -> None:
        self.pass_id: str | None = None
        self.regions: int | None = None
        self.committed = 0

    def reset(self) -> None:
        """Forget a pass nobody is running (a stored log that ends inside a bracket)."""
        self.pass_id, self.regions, self.committed = None, None, 0

    @property
    def running(self) -> bool:
        return self.pass_id is not None

    def feed(self, event: Event) -> bool:
        """Follow one event; True if the indicator changed."""
        if type(event) not in _COMPACTION_TYPES:
            return False
        before = self.text
        if isinstance(event, CompactionStartEvent):
            pass_id = event.data.pass_id or event.data.compaction_id
            if pass_id != self.pass_id:
                self.pass_id, self.regions, self.committed = pass_id, None, 0
        elif isinstance(event, CompactionPlanEvent):
            if event.data.pass_id == self.pass_id:
                self.regions = len(event.data.regions)
        elif isinstance(event, CompactionEndEvent):
            pass_id = event.data.pass_id or event.data.compaction_id
            if pass_id == self.pass_id:
                if event.data.error is not None:
                    self.reset()
                else:
                    self.committed += 1
                    if self.regions is None or self.committed >= self.regions:
                        self.reset()
        elif isinstance(event, SessionEndSeedEvent):
            self.reset()
        return self.text != before

    @property
    def text(self) -> str | None:
        if self.pass_id is None:
            return None
        if self.regions is None:
            return "compacting…"
        return f"compacting · {self.committed} of {self.regions} regions"


class CacheCounter:
    """The session's cache-hit ratio, kept as events arrive; the same figure as
    ``dsh.transcript.stats.SessionStats.cache_hit_ratio`` (append-origin assistant messages
    with usage: cache reads / all input)."""

    def __init__(self) -> None:
        self.uncached = 0
        self.read = 0
        self.written = 0

    def feed(self, event: Event) -> bool:
        if type(event) is not AssistantMessageEvent or event.surface_op != "append":
            return False
        usage = event.data.usage
        if usage is None:
            return False
        self.uncached += usage.input_tokens
        self.read += usage.cache_read_tokens or 0
        self.written += usage.cache_write_tokens or 0
        return True

    @property
    def ratio(self) -> float | None:
        total = self.uncached + self.read + self.written
        return self.read / total if total else None
