"""Session titles and the one-line summaries that pickers and lists show.

A session's title, for every face, is the latest ``session/title`` (``/title``) if any, else its
first prompt, flattened to one line (a character that does not print shown as its escape) and
cut at ``TITLE_CHARS`` (or a face's own width). A summary adds what a person needs to choose a
session: its workspace, when it was created and last written, and its size in turns.
``SummaryFold`` keeps what a summary needs as a log is read, so a summary can be brought up to
date from the events appended since (``dsh.transcript.listing``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from dsh.errors import printable_line
from dsh.events import (
    Event,
    SessionTitleEvent,
    TurnStartEvent,
    UserMessageEvent,
    UserSource,
)
from dsh.store import SessionHeader
from dsh.store.base import UnreadableSession
from dsh.transcript.shell_blocks import typed_part

TITLE_CHARS = 60
WIDEST_TITLE_CHARS = 80
"""The widest any face cuts a title (the web's sidebar): what a ``SummaryFold`` keeps."""
UNTITLED = "(no prompt yet)"


def trim_title(text: str, limit: int = TITLE_CHARS) -> str:
    """One line of at most ``limit`` characters (an ellipsis marks a cut), shown as
    ``dsh.errors.printable_line`` shows text: a title is whatever a person pasted or an import
    carried, so a terminal escape in it is shown as its escape, never sent to a terminal.
    Trimming a trimmed title again, to its width or a narrower one, is trimming once."""
    flat = printable_line(text)
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def session_title(events: Iterable[Event], limit: int = TITLE_CHARS) -> str | None:
    """The latest ``/title``, else the first prompt, trimmed to ``limit``; None for a session
    without either. Every face's title (the TUI's picker and ``/title``, the web's sidebar and
    header): it reads the whole of ``events``, since a ``/title`` may come at any point."""
    title: str | None = None
    first_prompt: str | None = None
    for event in events:
        if isinstance(event, SessionTitleEvent):
            title = event.data.title
        elif first_prompt is None:
            first_prompt = _prompt_text(event)
    return _chosen_title(title, first_prompt, limit)


def _prompt_text(event: Event) -> str | None:
    """The text of a prompt a person typed, without the ``!cmd`` output sent ahead of it (None
    for any other event)."""
    if (
        isinstance(event, UserMessageEvent)
        and event.surface_op == "append"
        and isinstance(event.data.source, UserSource)
    ):
        return typed_part(event.data.text())
    return None


def _chosen_title(title: str | None, first_prompt: str | None, limit: int) -> str | None:
    chosen = title if title is not None else first_prompt
    if chosen is None or not chosen.strip():
        return None
    return trim_title(chosen, limit)


@dataclass(frozen=True, slots=True)
class SessionSummary:
    id: str
    cwd: str
    created_at: int
    """Epoch milliseconds."""
    updated_at: int
    """Time of the last event (the creation time for an empty log)."""
    title: str
    turns: int
    events: int
    named: bool = True
    """The title is the session's own (its ``/title`` or first prompt), not ``UNTITLED`` or
    what stops its log from loading."""
    unreadable: UnreadableSession | None = None
    """Why its log does not load, in full (its title is then that reason, cut, and its figures
    the header's alone); None for a log that loads."""


def summarize(
    header: SessionHeader,
    events: Sequence[Event],
    *,
    title: str | None = None,
    title_chars: int = TITLE_CHARS,
    unreadable: UnreadableSession | None = None,
) -> SessionSummary:
    """The summary of one session from its header and its whole log (``title`` overrides), its
    title cut at ``title_chars``; ``unreadable``: why the log did not load."""
    own = None if title else session_title(events, title_chars)
    return SessionSummary(
        id=header.id,
        cwd=header.cwd,
        created_at=header.created_at,
        updated_at=max([header.created_at, *(e.time for e in events[-1:])]),
        title=title or own or UNTITLED,
        turns=sum(1 for e in events if isinstance(e, TurnStartEvent)),
        events=len(events),
        named=own is not None,
        unreadable=unreadable,
    )


class SummaryFold(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A session's summary figures, folded one event at a time: ``add`` the log's events in
    order (in any number of calls) and ``summary`` equals ``summarize`` over all of them. Titles
    are kept cut to ``WIDEST_TITLE_CHARS`` (cutting again, to that width or a narrower one, is
    cutting once), so the fold stays small and serves every face's width."""

    events: int = 0
    turns: int = 0
    last_time: int | None = None
    title: str | None = None
    """The latest ``/title``, trimmed to ``WIDEST_TITLE_CHARS``."""
    first_prompt: str | None = None
    """The first prompt, trimmed to ``WIDEST_TITLE_CHARS``."""

    def add(self, events: Sequence[Event]) -> None:
        for event in events:
            if isinstance(event, SessionTitleEvent):
                self.title = trim_title(event.data.title, WIDEST_TITLE_CHARS)
            elif isinstance(event, TurnStartEvent):
                self.turns += 1
            elif self.first_prompt is None and (text := _prompt_text(event)) is not None:
                self.first_prompt = trim_title(text, WIDEST_TITLE_CHARS)
        if events:
            self.events += len(events)
            self.last_time = events[-1].time

    def restart(self) -> None:
        """Back to the figures of an empty log."""
        self.events, self.turns, self.last_time = 0, 0, None
        self.title = self.first_prompt = None

    def summary(self, header: SessionHeader, title_chars: int = TITLE_CHARS) -> SessionSummary:
        """``summarize`` of the events added, its title cut at ``title_chars`` (at most
        ``WIDEST_TITLE_CHARS``)."""
        if title_chars > WIDEST_TITLE_CHARS:
            raise ValueError(f"titles are kept to {WIDEST_TITLE_CHARS} characters")
        own = _chosen_title(self.title, self.first_prompt, title_chars)
        return SessionSummary(
            id=header.id,
            cwd=header.cwd,
            created_at=header.created_at,
            updated_at=(
                header.created_at
                if self.last_time is None
                else max(header.created_at, self.last_time)
            ),
            title=own or UNTITLED,
            turns=self.turns,
            events=self.events,
            named=own is not None,
        )
