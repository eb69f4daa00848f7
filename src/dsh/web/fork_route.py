"""``/rewind`` and ``/fork`` for ``dsh web``'s composer (``dsh.agent.fork``, as the terminal UI's):

    GET  /api/sessions/{id}/turns                   the turns a prompt started, with it
    POST /api/sessions/{id}/fork  {beforeTurn?}     a copy of the session, whole or up to a turn

The fork answers ``{id, prompt, sentWith, note}``: the new session's id (the page opens it), what
was typed to start the turn left out (null for a whole copy; the page puts it in the composer),
the ``!cmd`` output blocks that prompt was sent with ([] for none) and the line that says what was
done, in the terminal UI's words. A session running a turn or a ``/compact`` here
is refused (409), as is one nothing is stored of yet (a new session: nothing to copy); a turn
no prompt started is a 400 naming those there are. The parent is only read, on a worker thread,
whoever holds it (a turn it runs elsewhere is left out of a whole copy: ``dsh.agent.fork``).

The turns list what was typed to start them, not the ``!cmd`` output a terminal UI sent ahead
of it (``dsh.transcript.shell_blocks.typed_part``), and the prompt handed back is what was typed
too: that output comes apart (``split_blocks``), and the page shows it and sends it again ahead
of the copy's next prompt, as the terminal UI's ``/rewind`` does. The copy runs on the
route ``/model`` chose for the parent here, its window with it (kept for the copy, and recorded
in it), else on the parent's latest record."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dsh.agent.fork import fork_note, fork_session, turn_prompts
from dsh.agent.settings_record import route_snapshot
from dsh.errors import DshError
from dsh.events import SessionSettings
from dsh.surface import Session
from dsh.transcript.shell_blocks import split_blocks, typed_part
from dsh.web.bodies import ForkBody, read_body
from dsh.web.errors import bad_request, from_dsh_error
from dsh.web.sessions import SessionRegistry, check_session_id

NOTHING_STORED = "nothing to copy: no prompt has been sent in this session yet"


def fork_routes(registry: SessionRegistry, session_path: str) -> list[Route]:
    def turns_of(session: Session) -> list[dict[str, Any]]:
        return [
            {"turn": t.turn, "prompt": typed_part(t.prompt)} for t in turn_prompts(session.events)
        ]

    async def turns(request: Request) -> Response:
        session_id = check_session_id(request.path_params["session_id"])
        handle = registry.handles.get(session_id)
        if handle is not None:
            return JSONResponse({"turns": turns_of(handle.session)})
        return JSONResponse({"turns": await registry.stored(session_id, turns_of)})

    async def fork(request: Request) -> Response:
        session_id = check_session_id(request.path_params["session_id"])
        body = await read_body(request, ForkBody)
        handle = registry.handles.get(session_id)
        runtime = registry.runtime
        chosen = runtime.chosen_route(session_id)
        running: SessionSettings | None = None
        if handle is not None:
            registry.ensure_idle(handle)
            if handle.draft:
                raise bad_request(NOTHING_STORED)
            if chosen is not None:  # ``/model``'s choice, logged by no turn yet perhaps
                settings, route = runtime.own(handle.session)
                running = route_snapshot(handle.session, settings, route)
        try:
            made = await anyio.to_thread.run_sync(
                lambda: fork_session(
                    registry.store, session_id, before_turn=body.before_turn, settings=running
                )
            )
        except DshError as exc:
            raise from_dsh_error(exc) from exc
        if chosen is not None:  # the copy goes on on it, whatever the flags say
            runtime.choose_route(made.session_id, chosen)
        blocks, prompt = split_blocks(made.before.prompt) if made.before else ([], None)
        return JSONResponse(
            {"id": made.session_id, "prompt": prompt, "sentWith": blocks, "note": fork_note(made)}
        )

    return [
        Route(session_path + "/turns", turns, methods=["GET"]),
        Route(session_path + "/fork", fork, methods=["POST"]),
    ]
