"""Finding compaction checkpoints in a session log (docs/compaction.md, "The events of a pass"
and "The two recall tools").

A checkpoint is named ``c<summarySeq>``: the seq of its ``compaction/summary`` event. Its bracket
is the ``compaction/start`` with the same ``compactionId`` before the summary and the
``compaction/end`` after it; the checkpoint node is the replacing ``user/message`` that cites the
summary. A checkpoint is *completed* iff its bracket ended without an error and its replace
landed. Everything here is a pure function of the log.

Given the log's per-type index (``index``: ``Session.of_type``, which the agent hands the recall
tools), the summaries and their brackets are found in the lists of those few kinds, bisected by
seq, so listing the checkpoints costs about their number, not the log's length; without one the
log is walked, with the same result.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from dsh.errors import DshError
from dsh.events import (
    CheckpointKind,
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    Event,
    EventBase,
    EventsByType,
    UserMessageEvent,
    event_type_of,
    is_append_surface_event,
    is_checkpoint_event,
    is_replacement_surface_event,
)
from dsh.surface import summary_kind

RecallErrorCode = Literal[
    "INVALID_ARGUMENT",
    "CHECKPOINT_NOT_FOUND",
    "ORPHANED_COMPACTION",
    "INVALID_OFFSET",
    "NON_AGENT_CALLER",
]
INVALID_ARGUMENT: RecallErrorCode = "INVALID_ARGUMENT"
CHECKPOINT_NOT_FOUND: RecallErrorCode = "CHECKPOINT_NOT_FOUND"
ORPHANED_COMPACTION: RecallErrorCode = "ORPHANED_COMPACTION"
INVALID_OFFSET: RecallErrorCode = "INVALID_OFFSET"
NON_AGENT_CALLER: RecallErrorCode = "NON_AGENT_CALLER"

NO_COMPACTED_HISTORY = (
    "This session has no compacted history yet: nothing has been compacted, so the whole "
    "conversation is still in your context."
)

E = TypeVar("E", bound=EventBase)

_ID = re.compile(r"c([0-9]+)")
_KNOWN_IDS_SHOWN = 5


class RecallError(DshError):
    """A typed recall failure: ``code`` is one of ``RecallErrorCode``, the message says why."""

    def __init__(self, code: RecallErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: RecallErrorCode = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One completed checkpoint: its bracket, its summary and the node that replaced the span."""

    start: CompactionStartEvent
    summary: CompactionSummaryEvent
    node: UserMessageEvent
    """The checkpoint ``user/message`` (the replace)."""
    end: CompactionEndEvent

    @property
    def seq(self) -> int:
        """The summary seq, the number in the checkpoint id."""
        return self.summary.seq

    @property
    def id(self) -> str:
        return checkpoint_id(self.summary.seq)

    @property
    def kind(self) -> CheckpointKind:
        """``index`` or ``state`` (a legacy summary without a kind counts as state)."""
        return summary_kind(self.summary)

    @property
    def shadowed_seqs(self) -> tuple[int, ...]:
        return self.summary.data.shadowed_seqs

    @property
    def shadowed_range(self) -> tuple[int, int]:
        return self.summary.data.shadowed_range


def conversation_span(events: Sequence[Event], seqs: Sequence[int]) -> tuple[int, int]:
    """The smallest and largest seq of the conversation events that the surface nodes ``seqs``
    stand for — directly, or through the checkpoints and pruned results they replaced — read
    forwards, as a footer names them (docs/compaction.md, "The footer"), never in surface
    order: a superseded state leads a later stub's span although its seq is after the older
    tail it did not shadow."""
    low, high = None, None
    stack = list(seqs)
    while stack:
        seq = stack.pop()
        event = events[seq]
        if is_replacement_surface_event(event):
            stack.extend(
                s
                for s in event.source_event_seqs or ()
                if is_append_surface_event(events[s]) or is_replacement_surface_event(events[s])
            )
            continue
        low = seq if low is None else min(low, seq)
        high = seq if high is None else max(high, seq)
    if low is None or high is None:
        raise ValueError("a span needs at least one surface node")
    return low, high


class ConversationSpans:
    """:func:`conversation_span`, remembering the span behind each checkpoint or pruned copy it
    walked (events never change), so a checkpoint heading a long chain (a rollup of rollups of
    every older stub) is walked once, not on every read. A remembered node is used only for
    the very event it was computed for: a memo given another log computes afresh."""

    def __init__(self) -> None:
        self._behind: dict[int, tuple[Event, tuple[int, int] | None]] = {}

    def of(self, events: Sequence[Event], seqs: Sequence[int]) -> tuple[int, int]:
        """``conversation_span(events, seqs)``."""
        found = [span for span in (self._one(events, seq) for seq in seqs) if span is not None]
        if not found:
            raise ValueError("a span needs at least one surface node")
        return min(low for low, _ in found), max(high for _, high in found)

    def _one(self, events: Sequence[Event], seq: int) -> tuple[int, int] | None:
        """The span behind one node (None: it stands for no conversation event)."""
        if not is_replacement_surface_event(events[seq]):
            return seq, seq
        if self._knows(events, seq):
            return self._behind[seq][1]
        stack = [seq]
        while stack:  # iterative: a chain of checkpoints can be long
            top = stack[-1]
            event = events[top]
            sources = [
                s
                for s in getattr(event, "source_event_seqs", None) or ()
                if is_append_surface_event(events[s]) or is_replacement_surface_event(events[s])
            ]
            missing = [
                s
                for s in sources
                if is_replacement_surface_event(events[s]) and not self._knows(events, s)
            ]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            spans = [
                self._behind[s][1] if is_replacement_surface_event(events[s]) else (s, s)
                for s in sources
            ]
            known = [span for span in spans if span is not None]
            self._behind[top] = (
                event,
                (min(lo for lo, _ in known), max(hi for _, hi in known)) if known else None,
            )
        return self._behind[seq][1]

    def _knows(self, events: Sequence[Event], seq: int) -> bool:
        kept = self._behind.get(seq)
        return kept is not None and kept[0] is events[seq]


def lies_within(events: Sequence[Event], seqs: Sequence[int], low: int, high: int) -> bool:
    """Whether every conversation event the surface nodes ``seqs`` stand for has a seq in
    ``[low, high)`` (and there is one): ``low <= first and last < high`` for ``(first, last)
    = conversation_span(events, seqs)``, found without walking what lies outside. A node
    stands only for events at or before its own seq (a replace shadows what was logged before
    it), so a node below ``low`` answers no at once, whatever chain of checkpoints it heads,
    and the walk ends at the first event out of the range."""
    stack, seen = list(seqs), False
    while stack:
        seq = stack.pop()
        if seq < low:
            return False
        event = events[seq]
        if is_replacement_surface_event(event):
            stack.extend(
                s
                for s in event.source_event_seqs or ()
                if is_append_surface_event(events[s]) or is_replacement_surface_event(events[s])
            )
        elif seq >= high:
            return False
        else:
            seen = True
    return seen


def checkpoint_id(summary_seq: int) -> str:
    """``c<summarySeq>``: how footers, tools and the CLI name a checkpoint."""
    return f"c{summary_seq}"


def parse_checkpoint_id(value: object) -> int:
    """The summary seq named by ``c<digits>``; ``INVALID_ARGUMENT`` for anything else."""
    text = value.strip() if isinstance(value, str) else None
    match = _ID.fullmatch(text) if text is not None else None
    if match is None:
        raise RecallError(
            INVALID_ARGUMENT,
            f"checkpoint must be an id like 'c123' (the letter c and the summary seq, as written "
            f"in a checkpoint footer), got {value!r}",
        )
    return int(match.group(1))


def resolve_checkpoint(
    events: Sequence[Event], checkpoint: object, index: EventsByType | None = None
) -> Checkpoint:
    """The completed checkpoint named ``checkpoint`` (``c<summarySeq>``), superseded or not;
    ``index``: the log's per-type index, if it has one (see the module's docstring).

    Raises ``RecallError``: ``INVALID_ARGUMENT`` (not ``c`` + digits), ``CHECKPOINT_NOT_FOUND``
    (no ``compaction/summary`` at that seq), ``ORPHANED_COMPACTION`` (the id names a
    ``compaction/start``, or the bracket has no successful end or no landed replace).
    """
    seq = parse_checkpoint_id(checkpoint)
    name = checkpoint_id(seq)
    if seq >= len(events):
        raise RecallError(
            CHECKPOINT_NOT_FOUND,
            f"no checkpoint {name}: the log has only {len(events)} events. {_known(events, index)}",
        )
    event = events[seq]
    if isinstance(event, CompactionStartEvent):
        raise RecallError(ORPHANED_COMPACTION, _start_message(events, event, index))
    if not isinstance(event, CompactionSummaryEvent):
        raise RecallError(
            CHECKPOINT_NOT_FOUND,
            f"no checkpoint {name}: the event at seq {seq} is {event_type_of(event)}, not "
            f"compaction/summary. {_known(events, index)}",
        )
    return _bracket(events, event, index)


def list_checkpoints(
    events: Sequence[Event], index: EventsByType | None = None
) -> list[Checkpoint]:
    """Every completed checkpoint in log order, superseded ones included; ``index``: the log's
    per-type index, if it has one (then the log itself is not read)."""
    if index is not None:
        summaries: Sequence[CompactionSummaryEvent] = index.of_type(CompactionSummaryEvent)
    else:
        summaries = [e for e in events if type(e) is CompactionSummaryEvent]  # a leaf class
    return _completed(events, summaries, index)


def checkpoints_after(
    events: Sequence[Event], seq: int, index: EventsByType | None = None
) -> list[Checkpoint]:
    """The completed checkpoints whose summary comes after ``seq``, in log order: what
    :func:`list_checkpoints` lists after it, found from there on (bisected in ``index``, the
    log's per-type index, if it has one; else the log walked from ``seq``)."""
    if index is not None:
        kept = index.of_type(CompactionSummaryEvent)
        summaries: Sequence[CompactionSummaryEvent] = kept[bisect_right(kept, seq, key=_seq) :]
    else:
        summaries = [e for e in events[seq + 1 :] if type(e) is CompactionSummaryEvent]
    return _completed(events, summaries, index)


def _completed(
    events: Sequence[Event],
    summaries: Sequence[CompactionSummaryEvent],
    index: EventsByType | None,
) -> list[Checkpoint]:
    """The checkpoints of ``summaries`` whose pass completed (an orphan is left out)."""
    found = []
    for summary in summaries:
        try:
            found.append(_bracket(events, summary, index))
        except RecallError:
            continue
    return found


def _bracket(
    events: Sequence[Event], summary: CompactionSummaryEvent, index: EventsByType | None
) -> Checkpoint:
    name = checkpoint_id(summary.seq)
    compaction_id = summary.data.compaction_id
    start = next(
        (
            event
            for event in _before(events, index, CompactionStartEvent, summary.seq)
            if event.data.compaction_id == compaction_id
        ),
        None,
    )
    if start is None:
        raise RecallError(
            ORPHANED_COMPACTION,
            f"checkpoint {name} has no compaction/start for compaction {compaction_id!r}",
        )
    end = next(
        (
            event
            for event in _after(events, index, CompactionEndEvent, summary.seq, len(events))
            if event.data.compaction_id == compaction_id
        ),
        None,
    )
    if end is None:
        raise RecallError(
            ORPHANED_COMPACTION,
            f"checkpoint {name} belongs to compaction {compaction_id!r}, which has no "
            "compaction/end: the pass never finished, so nothing was replaced",
        )
    if end.data.error is not None:
        raise RecallError(
            ORPHANED_COMPACTION,
            f"checkpoint {name} belongs to compaction {compaction_id!r}, which ended with an "
            f"error ({end.data.error}), so nothing was replaced",
        )
    node = next(
        (
            event
            for event in _after(events, index, UserMessageEvent, summary.seq, end.seq)
            if is_checkpoint_event(event) and summary.seq in _sources(event)
        ),
        None,
    )
    if node is None:
        raise RecallError(
            ORPHANED_COMPACTION,
            f"checkpoint {name} belongs to compaction {compaction_id!r}, whose checkpoint "
            "replace never landed",
        )
    return Checkpoint(start=start, summary=summary, node=node, end=end)


def _before(
    events: Sequence[Event], index: EventsByType | None, kind: type[E], seq: int
) -> Iterator[E]:
    """The events of type ``kind`` before ``seq``, nearest first."""
    if index is None:
        for at in range(seq - 1, -1, -1):
            event = events[at]
            if type(event) is kind:
                yield event
        return
    kept = index.of_type(kind)
    for at in range(bisect_left(kept, seq, key=_seq) - 1, -1, -1):
        yield kept[at]


def _after(
    events: Sequence[Event], index: EventsByType | None, kind: type[E], seq: int, stop: int
) -> Iterator[E]:
    """The events of type ``kind`` after ``seq`` and before ``stop``, in log order."""
    if index is None:
        for at in range(seq + 1, stop):
            event = events[at]
            if type(event) is kind:
                yield event
        return
    kept = index.of_type(kind)
    for at in range(bisect_right(kept, seq, key=_seq), bisect_left(kept, stop, key=_seq)):
        yield kept[at]


def _seq(event: EventBase) -> int:
    return event.seq


def _sources(event: UserMessageEvent) -> tuple[int, ...]:
    return event.source_event_seqs or ()


def _start_message(
    events: Sequence[Event], start: CompactionStartEvent, index: EventsByType | None
) -> str:
    name = checkpoint_id(start.seq)
    compaction_id = start.data.compaction_id
    completed = [
        c.id
        for c in list_checkpoints(events, index)
        if c.start.seq == start.seq and c.summary.data.compaction_id == compaction_id
    ]
    if completed:
        return (
            f"{name} points at the compaction/start of compaction {compaction_id!r}, not at its "
            f"checkpoint; its checkpoint id is {completed[0]}"
        )
    return (
        f"{name} points at the compaction/start of compaction {compaction_id!r}, which has no "
        "completed checkpoint (it never ended successfully)"
    )


def _known(events: Sequence[Event], index: EventsByType | None) -> str:
    ids = [c.id for c in list_checkpoints(events, index)]
    if not ids:
        return NO_COMPACTED_HISTORY
    shown = ", ".join(ids[-_KNOWN_IDS_SHOWN:])
    more = f" (and {len(ids) - _KNOWN_IDS_SHOWN} older)" if len(ids) > _KNOWN_IDS_SHOWN else ""
    return f"Completed checkpoints (oldest first): {shown}{more}."
