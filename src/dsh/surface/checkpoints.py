"""The checkpoint vocabulary shared by compaction, recall and the faces.

A checkpoint node is a replacing ``user/message`` whose ``sourceEventSeqs`` start with its
bracket's ``compaction/start`` and ``compaction/summary``; the summary says which kind of
checkpoint it is (``index`` or ``state``; a kind-less legacy summary counts as state). These are
pure functions of the log, so every layer from compaction up reads checkpoints the same way
without importing a backend (docs/compaction.md, "The events of a pass"). Where a pass may cut
the surface is ``dsh.surface.cuts``.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.events import CheckpointKind, CompactionSummaryEvent, Event, is_checkpoint_event
from dsh.surface.session import Session


def summary_of_node(events: Sequence[Event], node_seq: int) -> CompactionSummaryEvent | None:
    """The ``compaction/summary`` a checkpoint node cites (``sourceEventSeqs`` starts with the
    bracket's start and summary), or None."""
    sources = getattr(events[node_seq], "source_event_seqs", None) or ()
    for seq in sources[:2]:
        if 0 <= seq < len(events):
            candidate = events[seq]
            if isinstance(candidate, CompactionSummaryEvent):
                return candidate
    return None


def summary_kind(summary: CompactionSummaryEvent) -> CheckpointKind:
    """``index`` or ``state``: a legacy summary without a kind counts as state."""
    return summary.data.kind or "state"


def checkpoint_summary_event(session: Session, seq: int) -> CompactionSummaryEvent | None:
    """The ``compaction/summary`` behind the checkpoint node ``seq``, if any."""
    return summary_of_node(session.events, seq)


def checkpoint_summary_text(session: Session, seq: int) -> str | None:
    """The summary behind a checkpoint node, read from its ``compaction/summary`` event."""
    summary = summary_of_node(session.events, seq)
    return summary.data.summary if summary is not None else None


def checkpoint_kind(session: Session, seq: int) -> CheckpointKind | None:
    """``index`` or ``state`` for a checkpoint node (legacy kind-less summaries, and checkpoints
    without a summary event, count as state); None for a node that is not a checkpoint."""
    if not is_checkpoint_event(session.events[seq]):
        return None
    summary = summary_of_node(session.events, seq)
    return summary_kind(summary) if summary is not None else "state"
