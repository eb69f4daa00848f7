"""``/title`` in ``dsh web``: a session's title, shown and changed from its page, in the terminal
UI's words (``dsh.agent.title_command``).

``/title`` says the title (the latest ``/title``, else the first prompt) of any session, open
here or read from the store. ``/title TEXT`` on a session open here logs TEXT, one line cut as
every title is, as a ``session/title`` event: its pages see the event over the live stream (the
header and the session list show the new title), and every face shows it from then on. Not
while a turn or a ``/compact`` runs (409, as a prompt: the event would fall inside them); in a
new session nothing has been stored yet, so there is nothing to rename, and the answer says so
(the terminal UI's words before its first prompt), logging nothing."""

from __future__ import annotations

from typing import Any

from dsh.agent.title_command import NO_SESSION, current_title, retitle, title_note
from dsh.surface import Session
from dsh.web.errors import bad_request
from dsh.web.sessions import SessionRegistry, check_session_id


async def shown_title(registry: SessionRegistry, session_id: str) -> dict[str, Any]:
    """``/title``: ``{title, note}`` (``title`` null when the session has none yet)."""
    handle = registry.handles.get(check_session_id(session_id))
    if handle is not None and handle.draft:
        return {"title": None, "note": NO_SESSION}

    def said(session: Session) -> dict[str, Any]:
        return {"title": current_title(session), "note": title_note(session)}

    if handle is not None:
        return said(handle.session)
    return await registry.stored(session_id, said)


def new_title(registry: SessionRegistry, session_id: str, wanted: str) -> dict[str, Any]:
    """``/title TEXT`` on an open session: ``{title, note, logged}``; ``logged`` false (and
    ``title`` null) in a new session, which has nothing stored to rename. On the loop, as every
    append to an open session."""
    if not wanted.strip():
        raise bad_request("/title TEXT takes the new title")
    handle = registry.open_handle(session_id)
    registry.ensure_idle(handle)
    if handle.draft:
        return {"title": None, "note": NO_SESSION, "logged": False}
    note = retitle(handle.session, wanted)
    return {"title": current_title(handle.session), "note": note, "logged": True}
