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

from dsh.errors import DshError
from dsh.store import EventStore, JsonlStore
from dsh.transcript import PassDetails, TranscriptItem, TranscriptProjector
from dsh.transcript.newest import newest_page

if TYPE_CHECKING:
    from dsh.tui.app import DshApp
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


def begin(app: DshApp) -> None:
    """Open the app's session as it mounts: at once when its route is known without asking a
    server and its log is short; else the newest page of a long log first, and the route (which
    may wait for its server to load its model: ``dsh.tui.route_wait``) and the whole log
    resolved and read off the loop, the screen live meanwhile."""
    controller = app.controller
    resume = controller.options.resume
    page = first_page(controller.options.store, resume, from_bytes=app.first_page_from)
    started = not controller.resolves_off_the_loop
    try:
        items = controller.start(resume=page is None) if started else []
    except DshError as exc:
        app.open_failed(exc)
        return
    if started and (page is None or resume is None):  # nothing more to open
        app.opened(items)
        return
    if page is not None:
        app.transcript.load(page.items, page.details)  # the newest page now, the rest after
        app.update_status()
    opening = _finish(app, None if started else page is None, page)
    app.call_after_refresh(lambda: app.run_worker(opening, group="open"))


async def _finish(app: DshApp, start: bool | None, page: FirstPage | None) -> None:
    """``start`` the controller off the loop (True: with the session to resume; None: started
    already), then open the whole of a long session whose ``page`` shows."""
    from dsh.tui.route_wait import off_the_loop

    controller = app.controller

    def closed() -> bool:
        return app._closed

    items: list[TranscriptItem] | None = None
    try:
        if start is not None:
            items = await off_the_loop(app, lambda: _started(controller, closed, resume=start))
        if page is not None and not closed():
            items = await open_off_the_loop(controller, controller.options.resume or "", closed)
    except DshError as exc:
        app.open_failed(exc)
        return
    if items is not None and not closed():
        app.opened(items)
        app.server_wait.finish(ready=True)


def _started(
    controller: Controller, closed: Callable[[], bool], *, resume: bool
) -> list[TranscriptItem] | None:
    """``controller.start(resume=resume)``, for a thread: None (and what it opened closed
    again) if the app closed while it ran."""
    items = controller.start(resume=resume)
    if closed():
        controller.close()
        return None
    return items
