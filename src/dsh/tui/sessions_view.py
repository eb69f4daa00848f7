"""``/title`` and ``/sessions`` in the terminal UI: the session's title (logged as a
``session/title`` event, so it survives resume; ``dsh.agent.title_command``, the words every
face says) and the session picker over every session (those of other workspaces greyed: they
cannot be opened here; those another process holds marked busy)."""

from __future__ import annotations

import functools
import time

from dsh.agent.title_command import NO_SESSION, retitle, title_note
from dsh.store.locking import session_holder
from dsh.transcript.listing import session_summaries
from dsh.tui.controller import Controller
from dsh.tui.picker import SessionPicker


def title_command(controller: Controller, wanted: str) -> str:
    """``/title``: say the title; ``/title TEXT``: log TEXT (trimmed) as the new title."""
    session = controller.session
    if session is None:
        return NO_SESSION
    return retitle(session, wanted) if wanted else title_note(session)


def session_picker(controller: Controller) -> SessionPicker | None:
    """The picker over every stored session (None when there is none to show): this
    workspace's first; those of other workspaces greyed, as they cannot be opened here; those
    another process holds marked busy (and refused, naming it, when chosen)."""
    store = controller.options.store
    summaries = session_summaries(store)
    if not summaries:
        return None
    current = controller.session.id if controller.session is not None else None
    here = functools.cache(controller.opens_here)  # one look at each workspace
    return SessionPicker(
        summaries,
        current=current,
        heading="Open a session",
        opens_here=lambda summary: here(summary.cwd),
        holder=functools.partial(session_holder, store),
    )


def sessions_text(controller: Controller) -> str:
    """``/resume`` without an id: the sessions started in this workspace."""
    headers = controller.sessions()
    if not headers:
        return "No sessions in this directory yet."
    current = controller.session.id if controller.session is not None else None
    lines = ["Sessions in this directory (oldest first):"]
    for header in headers:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(header.created_at / 1000))
        mark = "  (this one)" if header.id == current else ""
        lines.append(f"  {header.id}  {created}{mark}")
    lines.append("Open one with /resume ID (a unique prefix is enough).")
    return "\n".join(lines)
