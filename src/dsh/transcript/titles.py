"""Session titles and the one-line summaries that pickers and lists show.

A session's title, for every face, is the latest ``session/title`` (``/title``) if any, else its
first prompt, flattened to one line and cut at ``TITLE_CHARS`` (or a face's own width). A
summary adds what a person needs to choose a session: its workspace, when it was created and last
written, and its size in turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dsh.errors import DshError
from dsh.events import (
    Event,
    SessionTitleEvent,
    TurnStartEvent,
    UserMessageEvent,
    UserSource,
)
from dsh.store import EventStore, SessionHeader

TITLE_CHARS = 60
UNTITLED = "(no prompt yet)"


def trim_title(text: str, limit: int = TITLE_CHARS) -> str:
    """One line of at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
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
        elif (
            first_prompt is None
            and isinstance(event, UserMessageEvent)
            and event.surface_op == "append"
            and isinstance(event.data.source, UserSource)
        ):
            first_prompt = event.data.text()
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


def summarize(
    header: SessionHeader, events: Sequence[Event], *, title: str | None = None
) -> SessionSummary:
    """The summary of one session from its header and its whole log (``title`` overrides)."""
    return SessionSummary(
        id=header.id,
        cwd=header.cwd,
        created_at=header.created_at,
        updated_at=max([header.created_at, *(e.time for e in events[-1:])]),
        title=title or session_title(events) or UNTITLED,
        turns=sum(1 for e in events if isinstance(e, TurnStartEvent)),
        events=len(events),
    )


def session_summaries(
    store: EventStore, headers: Iterable[SessionHeader] | None = None
) -> list[SessionSummary]:
    """Summaries of ``headers`` (default: every stored session), read without the writer lock;
    a session that cannot be read is summarised from its header alone, titled by the reason."""
    out: list[SessionSummary] = []
    for header in store.list() if headers is None else headers:
        try:
            log = store.open(header.id)
        except DshError as exc:
            out.append(summarize(header, [], title=f"(unreadable: {trim_title(str(exc), 40)})"))
            continue
        try:
            out.append(summarize(header, log.events))
        finally:
            log.close()
    return out
