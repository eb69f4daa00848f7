"""``GET /api/sessions/{id}/find?q=&limit=``: find in a session's transcript, originals of
compacted history included (``dsh.transcript.find``).

``FindIndexes`` keeps a ``FindIndex`` for each of the last sessions searched, so a query does
not project and case-fold the whole log again: a log that grew since is folded in from where the
index stopped, one that changed otherwise is folded again (the index checks which).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dsh.transcript.find import MAX_QUERY_CHARS
from dsh.transcript.find_index import FindIndex
from dsh.web.bodies import int_param
from dsh.web.errors import bad_request
from dsh.web.sessions import SessionRegistry, check_session_id

MAX_FIND_HITS = 1000
KEPT_INDEXES = 8
"""Sessions whose find index is kept (the least recently searched goes first)."""


class FindIndexes:
    """The find indexes of the sessions searched last, by session id."""

    def __init__(self, kept: int = KEPT_INDEXES) -> None:
        self.kept = kept
        self._indexes: OrderedDict[str, FindIndex] = OrderedDict()

    def of(self, session_id: str) -> FindIndex:
        index = self._indexes.pop(session_id, None) or FindIndex()
        self._indexes[session_id] = index
        while len(self._indexes) > self.kept:
            self._indexes.popitem(last=False)
        return index


async def find_answer(
    registry: SessionRegistry, indexes: FindIndexes, request: Request
) -> Response:
    session_id = check_session_id(request.path_params["session_id"])
    query = request.query_params.get("q", "")
    if not query.strip() or len(query) > MAX_QUERY_CHARS:
        raise bad_request(f"q must be 1 to {MAX_QUERY_CHARS} characters")
    limit = int_param(request, "limit", low=1, high=MAX_FIND_HITS) or MAX_FIND_HITS
    events = await registry.events(session_id)
    index = indexes.of(session_id)
    hits = await anyio.to_thread.run_sync(lambda: index.find(events, query, limit=limit + 1))
    shown: list[dict[str, Any]] = [
        {
            "seq": h.seq,
            "kind": h.kind,
            "snippet": h.snippet,
            "callId": h.call_id,
            "cardSeq": h.card_seq,
            "plugin": h.plugin,
        }
        for h in hits[:limit]
    ]
    return JSONResponse({"query": query, "hits": shown, "truncated": len(hits) > limit})
