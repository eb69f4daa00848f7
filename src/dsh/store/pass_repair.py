"""Crash repair of a compaction pass: close a pass a dead process left open, so people see it.

A pass whose process died during its model calls leaves a ``compaction/start`` with no
``compaction/end`` and no ``compaction/plan``: nothing of it reached the surface, and the
``session/end-seed`` of the next lifecycle makes that start dead, but the transcript had no
trace of it. When such a session is opened for writing (the writer lock: no other process runs
the pass), the repair closes each open start of the last lifecycle with
``compaction/end{error: PASS_PROCESS_ENDED}`` (the transcript's note of a pass that did not
finish), answers the ``/compact`` that ran it, when one did and was not answered, with
``command/done{ok: false}``, and says so once as a load warning. A ``/compact`` of that
lifecycle left unanswered otherwise is answered ``ok: false`` too: one whose process died
before its pass began (while it planned, or finished an earlier pass from its plan), or after
its pass failed and before the answer. A pass that logged its plan is not closed, whatever
lifecycle logged the plan (a process that died while finishing a pass from its plan leaves a
start of that pass open too): the next step commits the rest of it from the plan, and answers
its ``/compact`` then (docs/compaction.md, "Failure handling"). Neither event touches the
surface: the model sees what it saw before the pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dsh.events import (
    CommandDone,
    CommandDoneEvent,
    CommandRunEvent,
    CompactionEnd,
    CompactionEndEvent,
    CompactionPlanEvent,
    CompactionStartEvent,
    Event,
    EventBase,
    SessionEndSeedEvent,
    unfinished_pass_note,
)

PASS_PROCESS_ENDED = "the process ended during the pass"
"""The error a repaired pass's ``compaction/end`` carries."""


_WATCHED = frozenset(
    {
        CompactionStartEvent,
        CompactionEndEvent,
        CompactionPlanEvent,
        SessionEndSeedEvent,
        CommandRunEvent,
        CommandDoneEvent,
    }
)

COMPACT_NEVER_RAN = "Compaction did not run: the process ended before its pass began"
"""The answer a repair gives a ``/compact`` whose process died before the pass's lock."""


@dataclass(slots=True)
class _Lifecycle:
    """What the repair needs of the last lifecycle's events, from one backward walk."""

    open_starts: list[CompactionStartEvent] = field(default_factory=list)
    """Starts with no end, newest first."""
    planned: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    """Pass id → the error its (first) failed ``compaction/end`` carries."""
    pass_of: dict[str, str] = field(default_factory=dict)
    """``/compact`` command id → the pass it ran (its lock's ``sourceCommandId``)."""
    compacts: list[str] = field(default_factory=list)
    """``/compact`` command ids, newest first."""
    answered: set[str] = field(default_factory=set)


def _last_lifecycle(events: Sequence[Event]) -> _Lifecycle:
    """One pass backwards over the lifecycle, an exact-type test per event (a 100,000-event
    log in a few milliseconds). The plan of an open start may be older than the lifecycle: a
    process that was finishing an interrupted pass from its plan, and died in turn, left a
    start of that pass open; the walk then goes on through the older events for plans only."""
    seen = _Lifecycle()
    ended: set[str] = set()
    position = 0
    for position in range(len(events) - 1, -1, -1):
        event = events[position]
        kind = type(event)
        if kind not in _WATCHED:  # most events: one set lookup
            continue
        if isinstance(event, SessionEndSeedEvent):
            break
        if isinstance(event, CompactionEndEvent):
            ended.add(event.data.compaction_id)
            if event.data.error is not None and event.data.pass_id is not None:
                seen.failed[event.data.pass_id] = event.data.error
        elif isinstance(event, CompactionPlanEvent):
            seen.planned.add(event.data.pass_id)
        elif isinstance(event, CompactionStartEvent):
            command, pass_id = event.data.source_command_id, event.data.pass_id
            if command is not None and pass_id is not None:
                seen.pass_of[command] = pass_id
            if event.data.compaction_id not in ended:
                seen.open_starts.append(event)
        elif isinstance(event, CommandDoneEvent):
            seen.answered.add(event.data.command_id)
        elif isinstance(event, CommandRunEvent) and event.data.name == "compact":
            seen.compacts.append(event.data.command_id)
    unplanned = {s.data.pass_id for s in seen.open_starts} - seen.planned
    if unplanned:  # rare (a crash): look for the plans of those passes before the lifecycle
        seen.planned.update(
            event.data.pass_id
            for event in events[:position]
            if type(event) is CompactionPlanEvent and event.data.pass_id in unplanned
        )
    return seen


def unfinished_passes(events: Sequence[Event]) -> list[CompactionStartEvent]:
    """The ``compaction/start``s of the last lifecycle (after the latest ``session/end-seed``)
    with no ``compaction/end`` and no ``compaction/plan`` of their pass (in any lifecycle),
    oldest first."""
    return _unfinished(_last_lifecycle(events))


def _unfinished(seen: _Lifecycle) -> list[CompactionStartEvent]:
    return [s for s in reversed(seen.open_starts) if (s.data.pass_id or "") not in seen.planned]


def pass_repairs(
    events: Sequence[Event], first_seq: int, *, now_ms: int
) -> tuple[list[EventBase], list[str]]:
    """The events that close the passes ``unfinished_passes`` finds and answer the
    ``/compact`` commands left unanswered, numbered from ``first_seq``, and the warnings that
    say so; ([], []) when there is none."""
    seen = _last_lifecycle(events)
    repairs: list[EventBase] = []
    warnings: list[str] = []

    def answer(command: str, text: str) -> None:
        seen.answered.add(command)
        repairs.append(
            CommandDoneEvent(
                seq=first_seq + len(repairs),
                time=now_ms,
                data=CommandDone(command_id=command, ok=False, text=text),
            )
        )

    for event in _unfinished(seen):
        start = event.data
        repairs.append(
            CompactionEndEvent(
                seq=first_seq + len(repairs),
                time=now_ms,
                data=CompactionEnd(
                    compaction_id=start.compaction_id,
                    pass_id=start.pass_id,
                    turn=start.turn,
                    error=PASS_PROCESS_ENDED,
                ),
            )
        )
        command = start.source_command_id
        if command is not None and command not in seen.answered:
            answer(command, unfinished_pass_note(PASS_PROCESS_ENDED))
        warnings.append(
            f"the last compaction pass ({start.pass_id or start.compaction_id}) did not finish: "
            "the process ended during it; the context is as it was before the pass"
        )
    for command in reversed(seen.compacts):
        pass_id = seen.pass_of.get(command)
        if command in seen.answered or pass_id in seen.planned:
            continue  # a planned pass is finished from its plan, and answered then
        if pass_id is None:
            answer(command, COMPACT_NEVER_RAN)
            warnings.append(
                f"/compact ({command}) did not run: the process ended before its pass began"
            )
        elif pass_id in seen.failed:
            answer(command, unfinished_pass_note(seen.failed[pass_id]))
    return repairs, warnings
