"""The composer's prompt history for ``dsh web``: the terminal UI's, one file for both.

    GET  /api/prompt-history?session=ID   {prompts}: oldest first, each once
    POST /api/prompt-history  {text}      a draft that left the composer, appended (204)

The history is ``$DSH_HOME/prompt_history.jsonl`` (``dsh.config.prompt_history``): what up and
down walk in the page's composer is what they walk in the terminal UI's, and a prompt sent from
either is there for the other. With ``session``, that session's own prompts come last (the
newest), as the terminal UI seeds its history with the open session's; an unknown or not yet
stored session adds none. The file is read and written on a worker thread (it is locked while
it is)."""

from __future__ import annotations

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dsh.config import dsh_home
from dsh.config.prompt_history import PromptHistory, distinct, with_session_prompts
from dsh.events import APPEND, UserMessageEvent, UserSource
from dsh.surface import Session
from dsh.web.bodies import TextBody, read_body
from dsh.web.errors import ApiError
from dsh.web.sessions import SessionRegistry, check_session_id


def typed_prompts(session: Session) -> list[str]:
    """The prompts a person sent in ``session``, oldest first."""
    return [
        text
        for event in session.of_type(UserMessageEvent)
        if event.surface_op == APPEND
        and isinstance(event.data.source, UserSource)
        and (text := event.data.text())
    ]


async def session_prompts(registry: SessionRegistry, session_id: str) -> list[str]:
    """The prompts sent in ``session_id`` ([] for one that is not stored, or not a session)."""
    try:
        handle = registry.handles.get(check_session_id(session_id))
        if handle is not None:
            return typed_prompts(handle.session)
        return await registry.stored(session_id, typed_prompts)
    except ApiError:  # a new session no prompt has stored yet, an unknown or bad id
        return []


def prompt_history_routes(registry: SessionRegistry) -> list[Route]:
    async def prompt_history(request: Request) -> Response:
        history = PromptHistory(dsh_home())
        if request.method == "POST":
            body = await read_body(request, TextBody)
            await anyio.to_thread.run_sync(history.append, body.text)
            return Response(status_code=204)
        saved = await anyio.to_thread.run_sync(history.load)
        session_id = request.query_params.get("session")
        own = await session_prompts(registry, session_id) if session_id else []
        prompts = with_session_prompts(saved, own) if own else distinct(saved)
        return JSONResponse({"prompts": prompts})

    return [Route("/api/prompt-history", prompt_history, methods=["GET", "POST"])]
