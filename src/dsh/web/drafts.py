"""New sessions started from the page, before their first prompt: *drafts*.

"New session" gives the page a session to show and type into at once, but nothing is written
to the store until there is something to keep: a draft's ``Session`` lives in a
``MemoryStore`` of this server, open for writing here like any other (its own live stream, its
``/approval``, its Tab completion in its workspace), and is listed nowhere (``dsh sessions
list`` never sees it; neither does the page's session list). Its first prompt writes it to the
store (``Drafts.write``) with the same id, creation time and workspace, and the turn runs on the
stored session, as the terminal UI creates its session with its first prompt. A draft closed,
or left when the server stops, leaves nothing behind.

Nothing is logged in a draft before that: ``/compact`` answers that there is nothing to compact
(as the terminal UI does before its first prompt) and ``/undo`` that there is nothing to undo,
neither logging anything."""

from __future__ import annotations

from pathlib import Path

from dsh.errors import DshError
from dsh.store import EventStore
from dsh.store.memory import MemoryStore
from dsh.surface import Session
from dsh.web.errors import INTERNAL, ApiError, from_dsh_error


class Drafts:
    """The sessions started here that have had no prompt yet, in memory."""

    def __init__(self) -> None:
        self._memory = MemoryStore()

    def create(self, cwd: Path) -> Session:
        """A new session in ``cwd``, open for writing, in memory only."""
        return Session.create(self._memory, cwd=cwd)

    def write(self, store: EventStore, draft: Session) -> Session:
        """``draft`` in ``store``, open for writing (its writer lock held), with the draft's
        id, creation time and workspace; the draft is closed and forgotten. Raises ``ApiError``
        when the store refuses it (the draft is kept then)."""
        header = draft.header
        if draft.events:  # never: nothing logs in a draft (the module's docstring)
            raise ApiError(500, INTERNAL, f"draft session {header.id} has events")
        try:
            log = store.create(cwd=header.cwd, session_id=header.id, created_at=header.created_at)
        except DshError as exc:
            raise from_dsh_error(exc) from exc
        self.forget(draft)
        return Session(log)

    def forget(self, draft: Session) -> None:
        """Close ``draft`` and drop it from memory (closed, or written to the store)."""
        draft.close()
        self._memory.headers.pop(draft.id, None)
        self._memory.lines.pop(draft.id, None)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._memory.headers
