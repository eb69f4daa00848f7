"""Crash repair of a compaction pass: close a pass a dead process left open, so people see it.

A pass whose process died during its model calls leaves a ``compaction/start`` with no
``compaction/end`` and no ``compaction/plan``: nothing of it reached the surface, and the
``session/end-seed`` of the next lifecycle makes that start dead, but the transcript had no
trace of it. When such a session is opened for writing (the writer lock: no other process runs
the pass), the repair closes each open start of the last lifecycle with
``compaction/end{error: PASS_PROCESS_ENDED}`` (the transcript's note of a pass that did not
finish), answers the ``/compact`` that ran it, when one did and was not answered, with
``command/done{ok: false}``, and says so once as a load warning. A pass that logged its plan
is not closed: the next step commits the rest of it from the plan
(docs/compaction.md, "Failure handling"). Neither event touches the surface: the model sees
what it saw before the pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.events import (
    CommandDone,
    CommandDoneEvent,
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
    {CompactionStartEvent, CompactionEndEvent, CompactionPlanEvent, SessionEndSeedEvent}
)


def unfinished_passes(events: Sequence[Event]) -> list[CompactionStartEvent]:
    """The ``compaction/start``s of the last lifecycle (after the latest ``session/end-seed``)
    with no ``compaction/end`` and no ``compaction/plan`` of their pass, oldest first: one pass
    backwards over the lifecycle, an exact-type test per event (a 100,000-event log in a few
    milliseconds)."""
    ended: set[str] = set()
    planned: set[str] = set()
    open_starts: list[CompactionStartEvent] = []
    for event in reversed(events):
        if type(event) not in _WATCHED:  # most events: one set lookup
            continue
        if isinstance(event, SessionEndSeedEvent):
            break
        if isinstance(event, CompactionEndEvent):
            ended.add(event.data.compaction_id)
        elif isinstance(event, CompactionPlanEvent):
            planned.add(event.data.pass_id)
        elif isinstance(event, CompactionStartEvent) and event.data.compaction_id not in ended:
            open_starts.append(event)
    return [s for s in reversed(open_starts) if (s.data.pass_id or "") not in planned]


def pass_repairs(
    events: Sequence[Event], first_seq: int, *, now_ms: int
) -> tuple[list[EventBase], list[str]]:
    """The events that close the passes ``unfinished_passes`` finds, numbered from
    ``first_seq``, and the warnings that say so; ([], []) when none is open."""
    starts = unfinished_passes(events)
    if not starts:
        return [], []
    answered = {e.data.command_id for e in events[starts[0].seq :] if type(e) is CommandDoneEvent}
    repairs: list[EventBase] = []
    warnings: list[str] = []
    for event in starts:
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
        if command is not None and command not in answered:
            answered.add(command)
            text = unfinished_pass_note(PASS_PROCESS_ENDED)
            repairs.append(
                CommandDoneEvent(
                    seq=first_seq + len(repairs),
                    time=now_ms,
                    data=CommandDone(command_id=command, ok=False, text=text),
                )
            )
        warnings.append(
            f"the last compaction pass ({start.pass_id or start.compaction_id}) did not finish: "
            "the process ended during it; the context is as it was before the pass"
        )
    return repairs, warnings
