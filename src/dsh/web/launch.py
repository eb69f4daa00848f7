"""The browser ``dsh web`` starts trades its one-use launch code for the token by a ``fetch``,
never by a navigation.

``dsh web`` opens ``/?launch=<code>`` (``dsh.web.auth.LaunchCodes``: the token itself in the
browser's argv would show in ``ps``). The page is served as any page is, the code unspent; its
script takes the code out of the address bar and asks ``POST /api/launch {"code"}`` for the
token (``static/api.js``). A redirect to ``/?token=…`` made the token a visited URL, which the
browser keeps in its history database on disk and offers in the address bar, whatever the
page's ``history.replaceState`` did afterwards; a ``fetch`` answer is kept nowhere.

The route needs no token (the code stands for it); it is a state-changing request, so the
``OriginGuard`` refuses one another site's page makes. A spent, late or unknown code is 403.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dsh.web.auth import LAUNCH_PATH, LaunchCodes
from dsh.web.bodies import LaunchBody, read_body
from dsh.web.errors import ApiError

LAUNCH_SPENT = "LAUNCH_CODE_SPENT"
NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
"""The launch page and the token's answer: kept by no cache, the URL sent on by no referrer."""


def launch_route(token: str, codes: LaunchCodes | None) -> Route:
    """``POST /api/launch``: the token for a launch code presented once, in time."""

    async def launch(request: Request) -> Response:
        body = await read_body(request, LaunchBody)
        if codes is None or not codes.redeem(body.code):
            error = ApiError(
                403,
                LAUNCH_SPENT,
                "this launch link was used already or is too old: open the URL `dsh web` printed",
            )
            return error.response(headers=NO_STORE)
        return JSONResponse({"token": token}, headers=NO_STORE)

    return Route(LAUNCH_PATH, launch, methods=["POST"])
