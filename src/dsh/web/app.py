"""Routes of ``dsh web``: the page, its static files, the JSON API and the live stream.

    GET  /?token=T                                  the page (its script keeps the token)
    GET  /s/<file>                                  static files (ES modules, CSS, vendor)
    GET  /api/hello?nonce=N                         the server's proof it knows the token
    GET  /api/sessions                              list
    POST /api/sessions            {cwd?}            create (open here; stored at its first prompt)
    GET  /api/sessions/{id}                         header, stats, progress, approvals, mode
    GET  /api/sessions/{id}/history?before_seq=|after_seq=|around_seq=&max_messages=
    GET  /api/sessions/{id}/context                 the model's view, tokens and cost
    GET  /api/sessions/{id}/cost                    /cost: billed tokens per model, estimates
    GET  /api/sessions/{id}/title                   /title: the title, and its words
    GET  /api/sessions/{id}/find?q=&limit=          find in the transcript (originals included)
    GET  /api/sessions/{id}/commands                its workspace's and your prompt commands
    GET  /api/sessions/{id}/paths?prefix=           what an @partial may name in its workspace
    GET  /api/sessions/{id}/diff                    /diff: its workspace's changes since last commit
    WS   /api/sessions/{id}/live?after_seq=N           (follows writers in other processes too)
    GET  /api/warnings                              the server's warnings (not a session's)
    WS   /api/live                                  the server's warnings, the sessions' states
    POST /api/sessions/{id}/resume                  open a stored session for writing here
    POST /api/sessions/{id}/close                   release it
    POST /api/sessions/{id}/prompt  {text, command?} start a turn (202); command: /NAME ARGS
    POST /api/sessions/{id}/cancel                  cancel the running turn or /compact
    POST /api/sessions/{id}/compact {focus?}        manual /compact (202)
    POST /api/sessions/{id}/undo    {dryRun?}       /undo: the last turn's file edits taken back
    POST /api/sessions/{id}/approvals/{aid} {answer: once|always|deny, reason?}
    GET  /api/sessions/{id}/approval                /approval: the approval mode, and its words
    POST /api/sessions/{id}/approval {mode}         /approval MODE: ask, auto or read-only
    POST /api/sessions/{id}/title   {title}         /title TEXT: rename it (logged)
    GET  /api/sessions/{id}/model                   /model: its next turns' model, those listed
    POST /api/sessions/{id}/model   {name}          /model NAME: run its next turns on NAME
    GET  /api/sessions/{id}/retry                   /retry: the last turn's prompt, if it failed

Every answer that is not a success is ``{"error": {"code", "message"}}``. Only the files
listed in the static directory when the app is built are served; any other path (a NUL byte,
``..``, an odd encoding) is a plain 404.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Collection
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    Response,
)
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from dsh.errors import DshError
from dsh.web.auth import (
    CSP,
    STATIC_PREFIX,
    WS_PROTOCOL,
    FailureLimiter,
    LaunchCodes,
    OriginGuard,
    SecurityHeaders,
    TokenAuth,
)
from dsh.web.bodies import (
    AnswerBody,
    ApprovalModeBody,
    CompactBody,
    CreateBody,
    EmptyBody,
    ModelBody,
    PromptBody,
    TitleBody,
    UndoBody,
    prompt_over_body,
    read_body,
)
from dsh.web.context import session_context, session_cost
from dsh.web.errors import (
    ApiError,
    bad_request,
    handle_api_error,
    handle_dsh_error,
    handle_http_exception,
    handle_unexpected,
)
from dsh.web.find_route import FindIndexes, find_answer
from dsh.web.follow import Followers, lock_holder
from dsh.web.hello import hello_route
from dsh.web.history_route import history_answer
from dsh.web.launch import NO_STORE, launch_route
from dsh.web.live import frame, joined_mid_call, stream
from dsh.web.models import choose_model, shown_model
from dsh.web.more_routes import more_routes
from dsh.web.path_completion import checked_prefix, completed_paths
from dsh.web.prompt_commands import WebPromptCommands
from dsh.web.session_title import new_title, shown_title
from dsh.web.sessions import SessionRegistry, check_session_id
from dsh.web.warning_feed import SessionScope
from dsh.web.workspace_diff import workspace_changes

STATIC_DIR = Path(__file__).parent / "static"
MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}


# ---- the app --------------------------------------------------------------------------------


def static_files(static_dir: Path) -> dict[str, Path]:
    """The client files the static route may serve: regular files under ``static_dir`` with a
    known type, by their relative POSIX path (no dotfiles, nothing a symlink leads out to)."""
    root = static_dir.resolve()
    listed: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or path.suffix not in MEDIA_TYPES:
            continue
        if relative.as_posix() == "index.html":  # a template: served (filled in) at /
            continue
        if path.is_file() and path.resolve().is_relative_to(root):
            listed[relative.as_posix()] = path
    return listed


def create_app(
    registry: SessionRegistry,
    *,
    token: str,
    static_dir: Path = STATIC_DIR,
    allowed_hosts: Collection[str] | None = None,
    limiter: FailureLimiter | None = None,
    launch_codes: LaunchCodes | None = None,
) -> Starlette:
    """The ASGI app of ``dsh web`` over ``registry``, guarded by ``token``. ``allowed_hosts``
    (``host:port`` values) turns on the ``Host`` check; ``None`` accepts any ``Host``."""
    static_root = static_dir.resolve()
    files = static_files(static_root)
    followers = Followers(registry)
    prompt_commands = WebPromptCommands()
    find_indexes = FindIndexes()

    async def session_info(session_id: str) -> dict[str, Any]:
        """The registry's info plus ``heldBy``: the pid of another process writing it."""
        info = await registry.info(session_id)
        open_here = session_id in registry.handles
        info["heldBy"] = None if open_here else lock_holder(registry.store, session_id)
        return info

    async def index(request: Request) -> Response:
        html = (static_root / "index.html").read_text(encoding="utf-8")
        html = html.replace("{{STATIC}}", STATIC_PREFIX.rstrip("/"))
        headers = {"Content-Security-Policy": CSP}
        if "launch" in request.query_params:  # its script trades the code (dsh.web.launch)
            headers.update(NO_STORE)
        return HTMLResponse(html, headers=headers)

    async def static(request: Request) -> Response:
        path = files.get(request.path_params["path"])
        if path is None:
            raise HTTPException(404)
        media = MEDIA_TYPES.get(path.suffix, "application/octet-stream")
        return FileResponse(path, media_type=media, headers={"Cache-Control": "no-cache"})

    async def sessions(request: Request) -> Response:
        if request.method == "POST":
            body = await read_body(request, CreateBody)
            cwd = registry.default_cwd if body.cwd is None else Path(body.cwd)
            if not cwd.is_absolute() or not cwd.is_dir():
                raise bad_request(f"cwd must be an existing absolute directory, not {body.cwd!r}")
            handle = await registry.create(cwd)
            return JSONResponse(
                {"session": await registry.info(handle.session.id)}, status_code=201
            )
        return JSONResponse({"sessions": await registry.list_sessions()})

    async def session(request: Request) -> Response:
        return JSONResponse(await session_info(request.path_params["session_id"]))

    async def history(request: Request) -> Response:
        return await history_answer(registry, request)

    async def context(request: Request) -> Response:
        return JSONResponse(await session_context(registry, request.path_params["session_id"]))

    async def cost(request: Request) -> Response:
        return JSONResponse(await session_cost(registry, request.path_params["session_id"]))

    async def title(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        if request.method == "GET":
            return JSONResponse(await shown_title(registry, session_id))
        await registry.require_open(session_id)
        body = await read_body(request, TitleBody)
        return JSONResponse(new_title(registry, session_id, body.title))

    async def model(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        await registry.require_open(session_id)
        if request.method == "GET":
            return JSONResponse(await shown_model(registry, session_id))
        body = await read_body(request, ModelBody)
        return JSONResponse(await choose_model(registry, session_id, body.name))

    async def commands(request: Request) -> Response:
        # the workspace alone (the session's header), not the info's figures summed over its log
        workspace = await registry.workspace(request.path_params["session_id"])
        return JSONResponse({"commands": await prompt_commands.listed(workspace)})

    async def paths(request: Request) -> Response:
        prefix = checked_prefix(request.query_params.get("prefix"))
        workspace = await registry.workspace(request.path_params["session_id"])
        return JSONResponse(await completed_paths(workspace, prefix))

    async def diff(request: Request) -> Response:
        workspace = await registry.workspace(request.path_params["session_id"])
        return JSONResponse(await workspace_changes(workspace))

    async def find(request: Request) -> Response:
        return await find_answer(registry, find_indexes, request)

    async def resume(request: Request) -> Response:
        await read_body(request, EmptyBody)
        handle = await registry.resume(request.path_params["session_id"])
        return JSONResponse({"session": await registry.info(handle.session.id)})

    async def close(request: Request) -> Response:
        await read_body(request, EmptyBody)
        session_id = request.path_params["session_id"]
        await registry.require_open(session_id)
        registry.close(session_id)
        return JSONResponse({"closed": True})

    async def prompt(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        handle = await registry.require_open(session_id)
        body = await read_body(request, PromptBody, too_large=prompt_over_body)
        if not body.text.strip():
            raise bad_request("text must not be empty")
        text = body.text  # its size is checked by the runner, as every face's (413)
        if body.command:
            text = await prompt_commands.expand(text, Path(handle.session.header.cwd))
        await registry.start_prompt(session_id, text)
        return JSONResponse({"started": "turn"}, status_code=202)

    async def cancel(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        await registry.require_open(session_id)
        await read_body(request, EmptyBody)
        return JSONResponse({"cancelled": registry.cancel(session_id)})

    async def compact(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        await registry.require_open(session_id)
        body = await read_body(request, CompactBody)
        focus = body.focus.strip() if body.focus is not None else None
        answer = await registry.start_compact(session_id, focus or None)
        if answer is not None:  # a new session's: nothing to compact, nothing logged
            return JSONResponse({"started": None, "answer": answer})
        return JSONResponse({"started": "compact"}, status_code=202)

    async def undo(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        await registry.require_open(session_id)
        body = await read_body(request, UndoBody)
        result, logged = registry.undo(session_id, dry_run=body.dry_run)
        shown = {"ok": result.ok, "lines": list(result.lines), "turn": result.turn}
        return JSONResponse({**shown, "dryRun": body.dry_run, "logged": logged})

    async def approval(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        await registry.require_open(session_id)
        body = await read_body(request, AnswerBody)
        registry.answer(session_id, request.path_params["approval_id"], body.chosen())
        return JSONResponse({"answered": body.answer})

    async def approval_mode(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        if request.method == "GET":
            return JSONResponse(await registry.shown_approval(session_id))
        await registry.require_open(session_id)
        body = await read_body(request, ApprovalModeBody)
        return JSONResponse(registry.choose_approval(session_id, body.mode))

    async def live(websocket: WebSocket) -> None:
        session_id = websocket.path_params["session_id"]
        hub = subscriber = None
        try:
            check_session_id(session_id)
            after = _after_seq(websocket.query_params.get("after_seq"))
            hub = registry.hub(session_id)
            # subscribed before the hello's info and the catch-up are read: a change made while
            # they are read (an /approval from another request) comes as a frame after them,
            # never only into a snapshot already taken
            subscriber = hub.subscribe()
            # what the running call streamed so far, taken as the subscription is made
            handle = registry.handles.get(session_id)
            joined = followers.joined(session_id) if handle is None else handle.joined()
            info = await session_info(session_id)
            events = await registry.events(session_id)
        except ApiError as exc:
            if hub is not None and subscriber is not None:
                hub.unsubscribe(subscriber)
            await websocket.send_denial_response(exc.response())
            return
        catch_up = events[after + 1 :] if after is not None else ()
        catch_up, streamed = joined_mid_call(catch_up, after, joined, exact=handle is not None)
        followers.ensure(session_id, len(events) - 1)  # another process may be writing it
        await _accept(websocket)
        hello = frame("hello", session=info, warnings=registry.warnings.kept(session_id))
        await stream(websocket, hub, hello, catch_up, subscriber, streamed)

    async def warnings(request: Request) -> Response:
        return JSONResponse({"warnings": registry.warnings.kept(None)})

    async def server_live(websocket: WebSocket) -> None:
        """The server's warnings (not a session's): the ones kept, then each as it comes; and the
        listed sessions' states as they change (``dsh.web.list_states``)."""
        await _accept(websocket)
        hub = registry.warnings.server
        subscriber = hub.subscribe()  # before the kept ones are read: nothing falls between
        registry.list_states.ensure_sweeping()  # the other processes' locks, while pages listen
        waits = registry.runtime.route_waits.going_on()  # a route's server loading its model
        hello = frame("hello", warnings=registry.warnings.kept(None), routeWaits=waits)
        await stream(websocket, hub, hello, (), subscriber)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        with registry.warnings.installed() as feed:
            feed.bind_loop()
            yield
            await registry.list_states.stop()
            await followers.stop()
            await registry.shutdown()

    session_path = "/api/sessions/{session_id}"
    routes = [
        Route("/", index, methods=["GET"]),
        launch_route(token, launch_codes),
        hello_route(token),  # no token needed: dsh.web.hello
        Route(STATIC_PREFIX + "{path:path}", static, methods=["GET"]),
        Route("/api/sessions", sessions, methods=["GET", "POST"]),
        Route(session_path, session, methods=["GET"]),
        Route(session_path + "/history", history, methods=["GET"]),
        Route(session_path + "/context", context, methods=["GET"]),
        Route(session_path + "/cost", cost, methods=["GET"]),
        Route(session_path + "/title", title, methods=["GET", "POST"]),
        Route(session_path + "/model", model, methods=["GET", "POST"]),
        *more_routes(registry, session_path),  # /retry: dsh.web.more_routes
        Route(session_path + "/find", find, methods=["GET"]),
        Route(session_path + "/commands", commands, methods=["GET"]),
        Route(session_path + "/paths", paths, methods=["GET"]),
        Route(session_path + "/diff", diff, methods=["GET"]),
        Route(session_path + "/resume", resume, methods=["POST"]),
        Route(session_path + "/close", close, methods=["POST"]),
        Route(session_path + "/prompt", prompt, methods=["POST"]),
        Route(session_path + "/cancel", cancel, methods=["POST"]),
        Route(session_path + "/compact", compact, methods=["POST"]),
        Route(session_path + "/undo", undo, methods=["POST"]),
        Route(session_path + "/approvals/{approval_id}", approval, methods=["POST"]),
        Route(session_path + "/approval", approval_mode, methods=["GET", "POST"]),
        WebSocketRoute(session_path + "/live", live),
        Route("/api/warnings", warnings, methods=["GET"]),
        WebSocketRoute("/api/live", server_live),
    ]
    handlers: dict[Any, Any] = {
        ApiError: handle_api_error,
        DshError: handle_dsh_error,
        HTTPException: handle_http_exception,
        Exception: handle_unexpected,
    }
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(OriginGuard, hosts=allowed_hosts),
            Middleware(TokenAuth, token=token, limiter=limiter),
            Middleware(GZipMiddleware, minimum_size=1024),
            Middleware(SessionScope),
        ],
        exception_handlers=handlers,
        lifespan=lifespan,
    )


async def _accept(websocket: WebSocket) -> None:
    """Accept the page's socket, with the subprotocol it offered beside its token."""
    offered = websocket.scope.get("subprotocols", [])  # the page's: dsh + its token
    await websocket.accept(subprotocol=WS_PROTOCOL if WS_PROTOCOL in offered else None)


def _after_seq(raw: str | None) -> int | None:
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"after_seq must be an integer, not {raw!r}") from None
    if value < -1:
        raise bad_request(f"after_seq must be at least -1, not {value}")
    return value
