"""``GET /api/sessions/{id}/history``: a page of the session's log for the page to show.

``?before_seq=N`` the page before event N (older history, scrolling up), none of them: the
newest page (a stored log's read from its end, ``dsh.web.newest``); ``?after_seq=N`` the page
after event N (newer history, scrolling down a window that does not reach the end);
``?around_seq=N`` a window of the log around event N (find's jump to a match far back: the page
shows it in place of what it showed, and pages earlier and later from its two ends). Every
answer says ``hasMore`` (older events before it), ``hasLater`` (newer ones after it) and the
session's ``lastSeq``. ``max_messages`` bounds the messages each holds (a window's, half before
the event and half after).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response

from dsh.agent.settings_record import as_recorded_today
from dsh.events import Event, encode_event
from dsh.transcript.history import (
    DEFAULT_MAX_MESSAGES,
    HistoryPage,
    history_page,
    later_page,
    window_page,
)
from dsh.web.bodies import int_param, json_bytes
from dsh.web.errors import bad_request
from dsh.web.newest import newest_page
from dsh.web.sessions import SessionRegistry, check_session_id

MAX_PAGE_MESSAGES = 500


async def history_answer(registry: SessionRegistry, request: Request) -> Response:
    session_id = check_session_id(request.path_params["session_id"])
    before = int_param(request, "before_seq", low=0)
    after = int_param(request, "after_seq", low=-1)
    around = int_param(request, "around_seq", low=0)
    if sum(value is not None for value in (before, after, around)) > 1:
        raise bad_request("give at most one of before_seq, after_seq and around_seq")
    limit = int_param(request, "max_messages", low=1, high=MAX_PAGE_MESSAGES)
    page_size = limit or DEFAULT_MAX_MESSAGES

    def paged(events: Sequence[Event]) -> tuple[HistoryPage, int]:
        if after is not None:
            return later_page(events, after, page_size), len(events) - 1
        if around is not None:
            return window_page(events, around, page_size), len(events) - 1
        return history_page(events, before, page_size), len(events) - 1

    found: tuple[HistoryPage, int] | None = None
    log_path = getattr(registry.store, "log_path", None)
    plain = after is None and around is None and before is None
    if plain and log_path is not None and session_id not in registry.handles:
        # the newest page of a stored log: read from its end, not the whole log
        found = await anyio.to_thread.run_sync(newest_page, Path(log_path(session_id)), page_size)
    handle = registry.handles.get(session_id)
    if found is None and handle is not None:
        found = paged(handle.session.events)
    if found is None:
        found = await registry.stored(session_id, lambda session: paged(session.events))
    page, last = found
    # a base URL's secret an older dsh recorded is sent masked, as it is recorded now
    events = b",".join(encode_event(as_recorded_today(e)) for e in page.events)
    first = "null" if page.first_seq is None else str(page.first_seq)
    flags = f'"hasMore":{_js(page.has_more)},"hasLater":{_js(page.has_later)}'
    return json_bytes(
        b'{"events":[' + events + f'],{flags},"firstSeq":{first},"lastSeq":{last}}}'.encode()
    )


def _js(flag: bool) -> str:
    return "true" if flag else "false"
