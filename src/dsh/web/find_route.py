"""``GET /api/sessions/{id}/find?q=&limit=``: find in a session's transcript, originals of
compacted history included (``dsh.transcript.find``).

``FindIndexes`` keeps a ``FindIndex`` for each of the last sessions searched (8, and at most
64 million folded characters together), so a query does not project and case-fold the whole log
again: a log that grew since is folded in from where the index stopped, one that changed
otherwise is folded again (the index checks which).
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
KEPT_CHARS = 64_000_000
"""Folded text the kept indexes may hold together (a 100,000-event session's is about 27
million characters); past it the least recently searched go, the one asked for stays."""


class FindIndexes:
    """The find indexes of the sessions searched last, by session id."""

    def __init__(self, kept: int = KEPT_INDEXES, chars: int = KEPT_CHARS) -> None:
        self.kept = kept
        self.chars = chars
        self._indexes: OrderedDict[str, FindIndex] = OrderedDict()

    def of(self, session_id: str) -> FindIndex:
        """The session's index (a new one if none is kept), now the most recently searched."""
        index = self._indexes.pop(session_id, None) or FindIndex()
        self._indexes[session_id] = index
        self.trim()
        return index

    def trim(self) -> None:
        """Drop the least recently searched indexes past the budget (run again after a search:
        an index grows as it folds)."""
        while len(self._indexes) > 1 and (
            len(self._indexes) > self.kept
            or sum(kept.folded_chars for kept in self._indexes.values()) > self.chars
        ):
            self._indexes.popitem(last=False)

    def __contains__(self, session_id: str) -> bool:
        return session_id in self._indexes


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
    indexes.trim()
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
