"""The warning a request above the compaction threshold gives: its size, what it is made of,
and what happens next.

Its parts are the heuristic's, each calibrated as the session's measure is (and said so when
the ratio is not 1): the system prompt and tools, the checkpoints, the messages kept verbatim.
After a pass it says the request is still above; with no pass, whether nothing could be
compacted yet (a later pass waits for more history to go) or the pass failed, and why (no
back-off: the next step's check runs a new pass).
"""

from __future__ import annotations

from dataclasses import dataclass

from dsh.compaction.base import heuristic_total
from dsh.errors import error_line
from dsh.events import is_checkpoint_event
from dsh.surface import Session
from dsh.surface.calibration import calibration_note


@dataclass(frozen=True, slots=True)
class Pressure:
    threshold: int
    window: int
    threshold_ratio: float


def still_above(
    session: Session,
    pressure: Pressure,
    *,
    incoming: int,
    to_come: int,
    failed: str | None,
    compacted: bool,
) -> str:
    """The one line for ``session``'s next request (with ``incoming`` tokens still to come and
    ``to_come`` the recall tools' share) above ``pressure.threshold``."""
    measured = session.measure()
    nodes = sum(session.node_tokens(seq) for seq in session.nodes)
    fixed = heuristic_total(session) - nodes + to_come
    checkpoints = sum(
        session.node_tokens(seq)
        for seq in session.nodes
        if is_checkpoint_event(session.events[seq])
    )
    parts = [measured.scale(part) for part in (fixed, checkpoints, nodes - checkpoints + incoming)]
    note = calibration_note(measured.calibration)
    counted = f" ({note})" if note else ""
    said = "is still" if compacted else "is"
    then = "compaction tries again once more of the history can go"
    if compacted:
        after = "after compaction"
    elif failed is None:
        after = "and nothing can be compacted yet"
    else:
        after = f"and the compaction pass did not finish ({error_line(failed)})"
        then = "compaction tries again once more of the history can go"
    return (
        f"context {said} ~{sum(parts):,} tokens{counted} {after}, above the "
        f"threshold of {pressure.threshold:,} ({pressure.threshold_ratio:g} of the "
        f"{pressure.window:,}-token window): the system prompt and tools take {parts[0]:,}, "
        f"checkpoints {parts[1]:,}, the messages kept verbatim {parts[2]:,}; {then}"
    )
