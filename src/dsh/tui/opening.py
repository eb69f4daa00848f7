"""Opening a long stored session in two steps: its newest page on screen first, the whole log
after.

Loading and projecting a 100k-event log takes over a second; the newest page, read from the
end of the JSONL file (``dsh.transcript.newest``), takes milliseconds. The app shows that page
(projected on its own) at once, then opens the session for writing and projects all of it
off the event loop, and replaces the page with the whole transcript. Until then the composer
takes no turn. Short logs (under ``FIRST_PAGE_FROM_BYTES``) open in one step as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dsh.store import EventStore, JsonlStore
from dsh.transcript import PassDetails, TranscriptItem, TranscriptProjector
from dsh.transcript.newest import newest_page

if TYPE_CHECKING:
    from dsh.tui.controller import Controller

FIRST_PAGE_FROM_BYTES = 1 << 20
"""Logs at least this long are shown newest page first."""
FIRST_PAGE_MESSAGES = 20
"""Messages on the first page: more than a screen holds."""
STILL_OPENING = "Still opening the session: your draft is sent once its history is on screen."


@dataclass(frozen=True, slots=True)
class FirstPage:
    items: list[TranscriptItem]
    details: Mapping[str, PassDetails]


def first_page(store: EventStore, session_id: str | None, *, from_bytes: int) -> FirstPage | None:
    """The newest page of ``session_id``, projected, or None to open it in one step (no session
    to resume, a store without files, a short log, one the page reader does not vouch for)."""
    if session_id is None or not isinstance(store, JsonlStore):
        return None
    path = store.log_path(session_id)
    try:
        if path.stat().st_size < from_bytes:
            return None
    except OSError:
        return None
    found = newest_page(path, FIRST_PAGE_MESSAGES)
    if found is None:
        return None
    projector = TranscriptProjector()
    items: list[TranscriptItem] = []
    for event in found[0].events:
        items += projector.feed(event)
    return FirstPage(items, projector.details)


async def open_off_the_loop(
    controller: Controller, session_id: str, closed: Callable[[], bool]
) -> list[TranscriptItem] | None:
    """``controller.open(session_id)`` in a thread, so the screen stays live meanwhile; None
    (and the session closed again) if the app closed while it ran."""

    def run() -> list[TranscriptItem] | None:
        items = controller.open(session_id)
        if closed():  # the app's own close ran before this runner existed
            controller.close()
            return None
        return items

    return await asyncio.to_thread(run)
