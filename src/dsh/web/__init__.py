"""``dsh web``: a local browser client over the session log.

The server (Starlette + uvicorn) serves a JSON API, a live WebSocket stream per session and a
plain ES-module client; the browser renders the human transcript (docs/architecture.md, "The
human transcript") from the log's events with the same projection rule the terminal uses.
"""

from dsh.web.app import create_app
from dsh.web.auth import check_bind, is_loopback, new_token
from dsh.web.runtime import Runtime, WebRuntime
from dsh.web.server import BackgroundServer, bind_socket
from dsh.web.sessions import SessionRegistry

__all__ = [
    "BackgroundServer",
    "Runtime",
    "SessionRegistry",
    "WebRuntime",
    "bind_socket",
    "check_bind",
    "create_app",
    "is_loopback",
    "new_token",
]
