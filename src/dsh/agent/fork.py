"""Forking a session: a new session whose log begins with a copy of another's, whole or up to
the start of one of its turns — the terminal UI's ``/rewind`` (back to before a prompt, to send
it again, changed) and ``/fork``, and ``dsh sessions fork``.

The log format carries the fork in its header (``parentSession``, ``seedLength``: the events
copied, the parent's own, seqs included), and the fork's first write is its ``session/end-seed``
(the store's, as for any reopened session). Checkpoints in the copied part stay valid — they
name seqs the copy holds — so the model recalls what they stand for as it would in the parent.
The fork is titled after its parent (``… (fork)``), its first event of its own. The parent is
only read: it may be open elsewhere. Files in the workspace are not touched: what the turns
left out changed stays changed (the faces say so)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dsh.errors import UsageError
from dsh.events import (
    APPEND,
    Event,
    SessionTitle,
    TurnStartEvent,
    UserMessageEvent,
    UserSource,
)
from dsh.store import EventStore
from dsh.surface import Session
from dsh.transcript.titles import TITLE_CHARS, session_title, trim_title

FORK_MARK = " (fork)"


@dataclass(frozen=True, slots=True)
class TurnPrompt:
    """A turn of a session and the prompt a person sent to start it."""

    turn: int
    seq: int
    """Its ``turn/start``'s seq: where a fork before it cuts the log."""
    prompt: str


@dataclass(frozen=True, slots=True)
class Fork:
    session_id: str
    parent: str
    before: TurnPrompt | None
    """The turn left out, with its prompt (None: the whole log was copied)."""
    copied: int
    """Events copied from the parent."""


def turn_prompts(events: Sequence[Event]) -> list[TurnPrompt]:
    """The turns started by a person's prompt, oldest first (a turn whose prompt never reached
    the log, or was not typed, is left out: there is nothing to send again)."""
    found: list[TurnPrompt] = []
    start: TurnStartEvent | None = None
    for event in events:
        if isinstance(event, TurnStartEvent):
            start = event
        elif (
            start is not None
            and isinstance(event, UserMessageEvent)
            and event.surface_op == APPEND
            and isinstance(event.data.source, UserSource)
        ):
            text = event.data.text()
            if text:
                found.append(TurnPrompt(start.data.turn, start.seq, text))
            start = None
    return found


def fork_session(store: EventStore, parent_id: str, *, before_turn: int | None = None) -> Fork:
    """A new session copying ``parent_id``'s log, up to the start of turn ``before_turn`` (None:
    all of it). A turn with no prompt of a person's is refused, naming those there are."""
    with Session.open(store, parent_id) as parent:
        events = list(parent.events)
        cwd = parent.header.cwd
    before: TurnPrompt | None = None
    if before_turn is not None:
        turns = {turn.turn: turn for turn in turn_prompts(events)}
        if before_turn not in turns:
            there = ", ".join(str(t) for t in sorted(turns)) or "none"
            raise UsageError(
                f"session {parent_id} has no turn {before_turn} started by a prompt "
                f"(its turns with one: {there})"
            )
        before = turns[before_turn]
    seed = events[: before.seq] if before is not None else events
    log = store.create(cwd=cwd, parent_session=parent_id, seed=seed)
    with Session(log) as fork:
        room = TITLE_CHARS - len(FORK_MARK)  # the mark kept whole however long the title
        title = session_title(seed, room) or trim_title(parent_id, room)
        fork.append(SessionTitle(title=title + FORK_MARK))
        fork.sync()
    return Fork(log.id, parent_id, before, len(seed))


def fork_note(fork: Fork) -> str:
    """What the faces say of a fork made."""
    where = f"before turn {fork.before.turn}" if fork.before is not None else "at its end"
    return (
        f"Forked session {fork.parent} {where} into {fork.session_id} ({fork.copied} events "
        "copied; the original stays as it was). Files in the workspace are as the later "
        "turns left them: a fork does not undo their edits."
    )
