"""Forking a session: a new session whose log begins with a copy of another's, whole or up to
the start of one of its turns — the terminal UI's ``/rewind`` (back to before a prompt, to send
it again, changed) and ``/fork``, and ``dsh sessions fork``.

The log format carries the fork in its header (``parentSession``, ``seedLength``: the events
copied, the parent's own, seqs included), and the fork's first write is its ``session/end-seed``
(the store's, as for any reopened session). Checkpoints in the copied part stay valid — they
name seqs the copy holds — so the model recalls what they stand for as it would in the parent.
The fork is titled after its parent's title (its latest ``session/title`` in the whole log,
else its first prompt), its first event of its own: ``… (fork)``, then ``… (fork 2)``,
``… (fork 3)`` for the later copies of that title (a copy of a copy counts on, it does not
stack marks), so the pickers tell them apart; once the copy is made, its number is chosen and
its title written under a lock of the store's (``NUMBERING_LOCK``), so forks made at the same
time by other processes never share one (a holder stuck past the lock's wait costs a fork only
that: it is numbered without waiting, with a warning). It then records the settings the parent
runs with (a face's ``/model`` choice, else the parent's latest record), so the copy goes on on
the parent's model and window, not on those of an earlier record the cut kept.

The parent is only read: it may be open elsewhere, even running a turn. A copy of the whole
session is the session as it stands between turns: a turn still running (or one a crashed
process left open) is left out, the copy ending with the last finished turn, and the note says
so; with no finished turn there is nothing to copy, refused in one line. Files in the
workspace are not touched: what the turns left out changed stays changed (the faces say so)."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from dsh.agent.settings_record import record
from dsh.errors import UsageError
from dsh.events import (
    APPEND,
    Event,
    SessionSettings,
    SessionSettingsEvent,
    SessionTitle,
    TurnEndEvent,
    TurnStartEvent,
    UserMessageEvent,
    UserSource,
)
from dsh.store import EventStore
from dsh.store.locking import MutexUnavailable, recorded_holder, session_holder, store_mutex
from dsh.surface import Session
from dsh.transcript.listing import session_summaries
from dsh.transcript.titles import TITLE_CHARS, session_title, trim_title

log = logging.getLogger(__name__)

FORK_MARK = " (fork)"
_MARKED = re.compile(r"^(?P<base>.*?) \(fork(?: (?P<n>\d+))?\)$", re.DOTALL)
BASE_CHARS = TITLE_CHARS - len(" (fork 999)")
"""A fork's title is its parent's cut to this, its mark kept whole after it."""
NUMBERING_LOCK = "fork-numbering"
"""``store_mutex``'s name: from the numbers looked at to the fork's title written, one fork at
a time in the whole store, so forks made at once (two ``dsh sessions fork``, a terminal UI's
``/fork`` and a page's) never take the same number. The copy is made before, unlocked: the
lock is held for a listing and one synced append, not for a long log's copy."""


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
    unfinished: int | None = None
    """A whole copy: the turn left out because it had not finished (None: none was)."""
    running: bool = False
    """``unfinished`` was still running (another process held the session)."""


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


def fork_session(
    store: EventStore,
    parent_id: str,
    *,
    before_turn: int | None = None,
    settings: SessionSettings | None = None,
) -> Fork:
    """A new session copying ``parent_id``'s log, up to the start of turn ``before_turn`` (None:
    all of it, but a turn not finished). A turn with no prompt of a person's is refused, naming
    those there are. ``settings``: what the parent runs with now (a face's ``/model`` choice;
    None: its latest record), recorded in the copy unless its copied record says the same."""
    with Session.open(store, parent_id) as parent:
        events = list(parent.events)
        cwd = parent.header.cwd
    before: TurnPrompt | None = None
    unfinished: TurnStartEvent | None = None
    running = False
    if before_turn is not None:
        turns = {turn.turn: turn for turn in turn_prompts(events)}
        if before_turn not in turns:
            there = ", ".join(str(t) for t in sorted(turns)) or "none"
            raise UsageError(
                f"session {parent_id} has no turn {before_turn} started by a prompt "
                f"(its turns with one: {there})"
            )
        before = turns[before_turn]
        seed = events[: before.seq]
    else:
        unfinished = open_turn(events)
        seed = events if unfinished is None else events[: unfinished.seq]
        if unfinished is not None:
            running = _held(store, parent_id)
            if not any(isinstance(event, TurnEndEvent) for event in seed):
                state = "is still running" if running else "did not finish"
                raise UsageError(
                    f"nothing finished to copy yet: turn {unfinished.data.turn} of session "
                    f"{parent_id} {state}; fork it once a turn has ended"
                )
    carried = settings if settings is not None else _latest_settings(events)
    created = store.create(cwd=cwd, parent_session=parent_id, seed=seed)
    with Session(created) as fork:
        try:
            with store_mutex(store, NUMBERING_LOCK):  # numbers chosen and taken one at a time
                _title(store, fork, events, parent_id, carried)
        except MutexUnavailable as exc:  # a stuck holder costs the copy no more than its number
            log.warning(
                "%s",
                f"forks are numbered one at a time, but {exc}: {fork.id} was numbered without "
                "waiting (another fork may have its number)",
            )
            _title(store, fork, events, parent_id, carried)
    turn = unfinished.data.turn if unfinished is not None else None
    return Fork(created.id, parent_id, before, len(seed), turn, running)


def _title(
    store: EventStore,
    fork: Session,
    events: Sequence[Event],
    parent_id: str,
    carried: SessionSettings | None,
) -> None:
    """The fork's first events of its own, on disk: its title, then the settings it runs with."""
    fork.append(SessionTitle(title=fork_title(store, events, parent_id, made=fork.id)))
    if carried is not None:
        record(fork, carried)
    fork.sync()


def open_turn(events: Sequence[Event]) -> TurnStartEvent | None:
    """The log's last turn, if it has not ended (running, or left open by a crash)."""
    for event in reversed(events):
        if isinstance(event, TurnEndEvent):
            return None
        if isinstance(event, TurnStartEvent):
            return event
    return None


def fork_title(
    store: EventStore, events: Sequence[Event], parent_id: str, *, made: str | None = None
) -> str:
    """The parent's title (its id when it has none) without a fork mark, then ``(fork)`` for
    the first copy of that title, ``(fork N)`` for the next ones (one past the highest among
    the forks but ``made``, the copy being titled, whose copied log holds its parent's)."""
    base = trim_title(_unmarked(session_title(events, 10 * TITLE_CHARS) or parent_id), BASE_CHARS)
    forks = [h for h in store.list() if h.parent_session is not None and h.id != made]
    taken = 0
    for summary in session_summaries(store, forks):
        found = _MARKED.match(summary.title)
        if found is not None and found["base"] == base:
            taken = max(taken, int(found["n"] or 1))
    return base + (FORK_MARK if taken == 0 else f" (fork {taken + 1})")


def _held(store: EventStore, session_id: str) -> bool:
    """Whether a live process holds the session for writing: another one, or this one (a face
    that has it open: its repair on open closed any turn a crash left, so an open turn runs)."""
    if session_holder(store, session_id) is not None:
        return True
    lock_path = getattr(store, "lock_path", None)
    return lock_path is not None and recorded_holder(lock_path(session_id))[0] == os.getpid()


def _unmarked(title: str) -> str:
    while (found := _MARKED.match(title)) is not None and found["base"].strip():
        title = found["base"]
    return title


def _latest_settings(events: Sequence[Event]) -> SessionSettings | None:
    for event in reversed(events):
        if isinstance(event, SessionSettingsEvent):
            return event.data
    return None


def fork_note(fork: Fork) -> str:
    """What the faces say of a fork made."""
    if fork.before is not None:
        where = f"before turn {fork.before.turn}"
    elif fork.unfinished is not None:
        state = "is still running" if fork.running else "did not finish"
        where = (
            f"at the end of turn {fork.unfinished - 1} (turn {fork.unfinished} {state}: not copied)"
        )
    else:
        where = "at its end"
    events = "event" if fork.copied == 1 else "events"
    return (
        f"Forked session {fork.parent} {where} into {fork.session_id} ({fork.copied} {events} "
        "copied; the original stays as it was). Files in the workspace are as the later "
        "turns left them: a fork does not undo their edits."
    )
