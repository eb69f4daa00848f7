"""Routes of ``dsh web`` added beside ``app.py``'s table (one line there brings them in):

    GET  /api/sessions/{id}/retry                   /retry: the last turn's prompt, if it failed
    GET  /api/prompt-history?session=ID             the composer's history (prompt_history_route)
    POST /api/prompt-history  {text}                a draft sent, appended to it
    GET  /api/sessions/{id}/turns                   /rewind's list (fork_route)
    POST /api/sessions/{id}/fork  {beforeTurn?}     /rewind N, /fork: a copy of the session

``/retry`` answers ``{prompt, note}``: the prompt of the session's last turn when that turn did
not complete (failed, cancelled, cut at the output limit), which the page then sends as it sends
a typed prompt, or ``prompt`` null and the line that says why there is nothing to retry, in
the terminal UI's words (``dsh.agent.retry_command``). It reads the session open here, or the
stored one on a worker thread; nothing is logged."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dsh.agent.retry_command import Retry, last_turn_retry
from dsh.surface import Session
from dsh.web.fork_route import fork_routes
from dsh.web.prompt_history_route import prompt_history_routes
from dsh.web.sessions import SessionRegistry, check_session_id


def _public(retry: Retry) -> dict[str, Any]:
    return {"prompt": retry.prompt, "note": retry.note}


async def retry_prompt(registry: SessionRegistry, session_id: str) -> dict[str, Any]:
    """``/retry``'s answer for ``session_id`` (404 for an unknown one)."""
    handle = registry.handles.get(check_session_id(session_id))
    if handle is not None:
        return _public(last_turn_retry(handle.session))

    def read(session: Session) -> dict[str, Any]:
        return _public(last_turn_retry(session))

    return await registry.stored(session_id, read)


def more_routes(registry: SessionRegistry, session_path: str) -> list[Route]:
    """The routes this module serves, under ``session_path``."""

    async def retry(request: Request) -> Response:
        return JSONResponse(await retry_prompt(registry, request.path_params["session_id"]))

    return [
        Route(session_path + "/retry", retry, methods=["GET"]),
        *prompt_history_routes(registry),
        *fork_routes(registry, session_path),
    ]
