"""The ``/compact`` whose process ended after its pass logged a plan: answered once the pass is
finished from that plan.

A ``/compact`` (``dsh compact``) logs ``command/run``, and its pass's lock (the pass's first
``compaction/start``) names it in ``sourceCommandId``; the command is answered by
``command/done`` when the pass returns (``dsh.compaction.commands``). A process killed after the
pass logged its ``compaction/plan`` (between two commits, or after the last commit and before the
answer) leaves the command unanswered, and the crash repair at the next writable open leaves a
planned pass alone (``dsh.store.pass_repair``): the engine commits the rest from the plan at the
next step or ``/compact``. Then the command gets its answer: ``ok`` with what the whole pass
compacted (``sourceEventSeq`` = its state summary, as a live answer) or, for a plan abandoned on
resume, not ok with the reason; either says the pass was finished after the session was
reopened. Exactly once: a command already answered (by its own process, or by an earlier resume)
is left alone, and a process killed again before the answer leaves it to the next resume.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import TypeVar

from dsh.compaction.plan_check import plan_abandoned
from dsh.events import (
    CommandDone,
    CommandDoneEvent,
    CompactionEndEvent,
    CompactionPlanEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    EventBase,
    unfinished_pass_note,
)
from dsh.surface import Session

E = TypeVar("E", bound=EventBase)

ENDED_MID_PASS = "the process running the pass had ended mid-pass"
"""Why a ``/compact`` is answered by a later process than the one that ran it."""


def compacted_words(items: int, tokens: int) -> str:
    """A landed pass's answer: how many history items it compacted, and their size."""
    return f"Compacted {items} history items (~{tokens} tokens)"


def unanswered_command(session: Session, plan: CompactionPlanEvent) -> str | None:
    """The id of the ``/compact`` that ran ``plan``'s pass, when it has no ``command/done``;
    None for an automatic pass's plan or an answered command. Reads the few events of a few
    kinds after the pass's lock (the session's per-type index), not the log."""
    lock = _lock_of(session, plan)
    if lock is None or lock.data.source_command_id is None:
        return None
    command = lock.data.source_command_id
    for done in reversed(session.of_type(CommandDoneEvent)):
        if done.seq < lock.seq:
            break
        if done.data.command_id == command:
            return None
    return command


def answer_interrupted_command(session: Session, plan: CompactionPlanEvent) -> bool:
    """Answer the ``/compact`` of ``plan``'s pass if it is unanswered (call once the plan is
    finished: every region landed, or the plan abandoned); True when an answer was logged."""
    command = unanswered_command(session, plan)
    if command is None:
        return False
    error = _abandoned_with(session, plan) if plan_abandoned(session, plan) else None
    if error is not None:
        text = f"{unfinished_pass_note(error)} ({ENDED_MID_PASS})"
        session.append(CommandDone(command_id=command, ok=False, text=text))
        return True
    after_plan = _after(session.of_type(CompactionSummaryEvent), plan.seq)
    summaries = [s for s in after_plan if s.data.pass_id == plan.data.pass_id]
    items = sum(len(s.data.shadowed_seqs) for s in summaries)
    tokens = sum(s.data.shadowed_token_count for s in summaries)
    session.append(
        CommandDone(
            command_id=command,
            ok=True,
            text=(
                f"{compacted_words(items, tokens)}; finished from its plan after the session "
                f"was reopened ({ENDED_MID_PASS})"
            ),
            source_event_seq=summaries[-1].seq if summaries else None,
        )
    )
    return True


def _lock_of(session: Session, plan: CompactionPlanEvent) -> CompactionStartEvent | None:
    """The pass's lock: the last ``compaction/start`` before its plan, when of its pass."""
    starts = session.of_type(CompactionStartEvent)
    index = bisect_left(starts, plan.seq, key=lambda event: event.seq)
    if index == 0 or starts[index - 1].data.pass_id != plan.data.pass_id:
        return None
    return starts[index - 1]


def _abandoned_with(session: Session, plan: CompactionPlanEvent) -> str | None:
    """The error of the failed ``compaction/end`` that abandoned ``plan``."""
    for end in _after(session.of_type(CompactionEndEvent), plan.seq):
        if end.data.pass_id == plan.data.pass_id and end.data.error is not None:
            return end.data.error
    return None


def _after(events: Sequence[E], seq: int) -> Sequence[E]:
    """The events of ``events`` (in log order) after ``seq``."""
    return events[bisect_left(events, seq + 1, key=lambda event: event.seq) :]
