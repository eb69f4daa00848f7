"""Whether a logged ``compaction/plan`` can still be committed when a session is resumed.

A plan is written before its regions replace anything, so a process killed mid-commit is
finished from the plan at the next step. In a damaged log (a hand edit, a foreign tool) a
region may no longer be one run of surface nodes or may split a tool call from its result;
committing it would fail half-way on every later step. Such a plan is abandoned instead: its
pass is closed with a ``compaction/end`` carrying the reason, and it is never tried again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from dsh.compaction.base import RegionText, contiguous
from dsh.compaction.log_index import LogIndex
from dsh.events import CompactionEnd, CompactionEndEvent, CompactionPlanEvent
from dsh.surface import Session

log = logging.getLogger("dsh.compaction")


def plan_abandoned(session: Session, plan: CompactionPlanEvent) -> bool:
    """True iff a failed ``compaction/end`` of the plan's pass follows the plan."""
    for end in reversed(session.of_type(CompactionEndEvent)):
        if end.seq < plan.seq:
            return False
        if end.data.pass_id == plan.data.pass_id and end.data.error is not None:
            return True
    return False


def unlandable(session: Session, regions: Sequence[RegionText]) -> str | None:
    """Why one of ``regions`` cannot replace its nodes now, or None when every one can."""
    nodes = session.nodes
    for number, region in enumerate(regions, start=1):
        seqs = region.shadowed_seqs
        if not contiguous(nodes, seqs):
            return f"region {number} is no longer one run of surface nodes"
        if not (
            session.tool_pairing_balanced_before(seqs[0])
            and session.tool_pairing_balanced_after(seqs[-1])
        ):
            return f"region {number} would split a tool call from its result"
    return None


def abandon_plan(
    session: Session, index: LogIndex, plan: CompactionPlanEvent, turn: int | None, error: str
) -> None:
    """Close the plan's pass with ``error``: its open brackets, else one under its lock's id."""
    pass_id = plan.data.pass_id
    log.warning("compaction pass %s: %s", pass_id, error)
    index.update(session)
    starts = [s for s in index.open_starts.values() if s.data.pass_id == pass_id]
    for compaction_id in [s.data.compaction_id for s in starts] or [f"{pass_id}-1"]:
        session.append(
            CompactionEnd(compaction_id=compaction_id, pass_id=pass_id, turn=turn, error=error)
        )
