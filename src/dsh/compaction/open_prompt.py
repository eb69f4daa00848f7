"""The prompt the open turn answers: no pass compacts it (docs/compaction.md, "The prompt a turn
answers").

A pass that shadowed it left the model a summary of what it was asked: an overflow right after a
long prompt compacted the prompt itself, and the turn answered a state whose goal was the
prompt's first line. So while a turn is open, its prompt (the person's message logged after its
``turn/start``) stays on the surface verbatim with the notes its ``@path`` mentions attached
after it, whatever a pressure or overflow pass compacts
around it: the history before it, and the turn's own exchanges after it (``split_at_prompt``).
Once the turn has ended it is history like any other message. A manual ``/compact`` runs only
while no turn is open, so it is never held back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dsh.events import TurnEndEvent, TurnStartEvent, UserMessageEvent
from dsh.surface import Session, attached_to_previous, is_prompt


def open_prompt(session: Session) -> int | None:
    """The surface position of the prompt the open turn answers; None when no turn is open,
    its prompt is not logged yet (a pre-step check before its first step), or it is no
    longer a surface node (shadowed by an older dsh)."""
    starts = session.of_type(TurnStartEvent)
    if not starts:
        return None
    start = starts[-1].seq
    ends = session.of_type(TurnEndEvent)
    if ends and ends[-1].seq > start:
        return None
    found = None
    for event in reversed(session.of_type(UserMessageEvent)):
        if event.seq < start:
            break
        if is_prompt(event):
            found = event.seq  # the first one after the turn's start is its prompt
    if found is None or found not in session.surface:
        return None
    return session.surface.position(found)


def held_end(session: Session, position: int) -> int:
    """The surface position just past the prompt at ``position`` and the attachment notes
    that follow it (what the person asked with: kept with it, ``dsh.surface.cuts``)."""
    end = position + 1
    while attached_to_previous(session, end):
        end += 1
    return end


@dataclass(frozen=True, slots=True)
class Split:
    """A run of surface nodes a pass would compact, around the open turn's prompt."""

    before: Sequence[int]
    """The nodes before the prompt."""
    held: Sequence[int]
    """The prompt and its attachment notes when the prompt lies inside the run (they are
    kept), else empty."""
    after: Sequence[int]
    """The nodes after them (the turn's own exchanges), empty when the prompt is not inside."""


def split_at_prompt(session: Session, first: int, keep: int) -> Split:
    """The surface nodes ``first``..``keep`` (a pass's run) split around the open turn's prompt
    and its attachments when the prompt lies among them; held nodes with nothing after them in
    the run end the run instead. Both cuts are clean (``dsh.surface.cuts``): a person's prompt
    opens a turn (every call before it is answered), neither it nor an attachment note carries
    a call, and the held run ends where the notes do."""
    nodes = session.nodes
    position = open_prompt(session)
    if position is None or not first <= position < keep:
        return Split(nodes[first:keep], (), ())
    end = min(held_end(session, position), keep)
    return Split(nodes[first:position], nodes[position:end], nodes[end:keep])
