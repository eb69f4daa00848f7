"""The compaction engine's view of the log: open brackets, the last lifecycle mark, the last
plan and whether a turn is open, kept incrementally so no step scans the whole log."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field

from dsh.events import (
    CompactionEndEvent,
    CompactionPlanEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    SessionEndSeedEvent,
    TurnEndEvent,
    TurnStartEvent,
    is_checkpoint_event,
)
from dsh.surface import Session


@dataclass(slots=True)
class LogIndex:
    """What the engine needs from the log, kept incrementally (no full scan per step). The
    first update reads the session's per-type index instead of scanning the log it opened."""

    scanned: int = 0
    open_starts: dict[str, CompactionStartEvent] = field(default_factory=dict)
    last_end_seed: int = -1
    last_plan: CompactionPlanEvent | None = None
    turn_open: bool = False

    def update(self, session: Session) -> None:
        events = session.events
        if self.scanned == 0:
            self._bootstrap(session)
        for event in events[self.scanned :]:
            if isinstance(event, CompactionStartEvent):
                self.open_starts[event.data.compaction_id] = event
            elif isinstance(event, CompactionEndEvent):
                self.open_starts.pop(event.data.compaction_id, None)
            elif isinstance(event, SessionEndSeedEvent):
                self.last_end_seed = event.seq
            elif isinstance(event, CompactionPlanEvent):
                self.last_plan = event
            elif isinstance(event, TurnStartEvent):
                self.turn_open = True
            elif isinstance(event, TurnEndEvent):
                self.turn_open = False
        self.scanned = len(events)

    def _bootstrap(self, session: Session) -> None:
        """The same state as scanning every event so far, from the few events it depends on."""
        starts = session.of_type(CompactionStartEvent)
        ends = session.of_type(CompactionEndEvent)
        brackets: Iterable[CompactionStartEvent | CompactionEndEvent] = heapq.merge(
            starts, ends, key=lambda e: e.seq
        )
        for event in brackets:
            if isinstance(event, CompactionStartEvent):
                self.open_starts[event.data.compaction_id] = event
            else:
                self.open_starts.pop(event.data.compaction_id, None)
        seeds, plans = session.of_type(SessionEndSeedEvent), session.of_type(CompactionPlanEvent)
        self.last_end_seed = seeds[-1].seq if seeds else -1
        self.last_plan = plans[-1] if plans else None
        turn_starts, turn_ends = session.of_type(TurnStartEvent), session.of_type(TurnEndEvent)
        last_start = turn_starts[-1].seq if turn_starts else -1
        self.turn_open = last_start > (turn_ends[-1].seq if turn_ends else -1)
        self.scanned = len(session.events)


def unended_landed(session: Session, index: LogIndex, pass_id: str) -> list[CompactionStartEvent]:
    """The open ``compaction/start``s of pass ``pass_id`` whose checkpoint replace landed but
    whose ``compaction/end`` never did (a process killed between the two): the checkpoint
    stands on the surface, yet recall reads only a closed bracket, so the originals it shadows
    were out of reach of ``history_read``/``history_search`` until the bracket is closed."""
    events = session.events
    landed = []
    for start in [s for s in index.open_starts.values() if s.data.pass_id == pass_id]:
        summary: CompactionSummaryEvent | None = None
        for event in events[start.seq + 1 :]:
            if summary is None:
                if (
                    isinstance(event, CompactionSummaryEvent)
                    and event.data.compaction_id == start.data.compaction_id
                ):
                    summary = event
            elif is_checkpoint_event(event) and summary.seq in (event.source_event_seqs or ()):
                landed.append(start)
                break
    return landed
