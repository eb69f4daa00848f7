"""The words and the deed of ``/title``, for every face that has it (the terminal UI, ``dsh
web``'s composer): say a session's title, or rename the session by logging a ``session/title``
event, whose text is then the title every face shows (``dsh.transcript.titles``), a resume
included.

What a face does with the answer is its own business (the terminal UI: a note in its
transcript; ``dsh web``: a note above its composer); the words are the same, so ``/title``
reads the same wherever it is typed."""

from __future__ import annotations

from itertools import chain

from dsh.events import SessionTitle, SessionTitleEvent, UserMessageEvent
from dsh.surface import Session
from dsh.transcript.titles import TITLE_CHARS, session_title, trim_title

NO_SESSION = "No session yet: the first prompt starts one (and titles it); /title then renames it."
"""``/title`` before the first prompt: there is nothing to name yet, and nothing is logged."""


def current_title(session: Session, limit: int = TITLE_CHARS) -> str | None:
    """The session's title (``session_title``: the latest ``/title``, else the first prompt, cut
    at ``limit``), reading only the two kinds of event that can name it."""
    titles = session.of_type(SessionTitleEvent)[-1:]
    return session_title(chain(titles, session.of_type(UserMessageEvent)), limit)


def title_note(session: Session) -> str:
    """What ``/title`` without text answers."""
    title = current_title(session)
    if title is None:
        return "This session has no title yet: its first prompt will be it (/title TEXT)."
    return f"Title: {title}  (/title TEXT renames the session)"


def retitle(session: Session, wanted: str) -> str:
    """``/title TEXT``: log ``wanted`` as the session's title, one line cut as every title is
    (``trim_title``), and say it."""
    title = trim_title(wanted)
    session.append(SessionTitle(title=title))
    return f"Session titled: {title}"
