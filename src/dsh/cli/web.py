"""``dsh web [--host 127.0.0.1] [--port 3080] [--no-open] [--token T]``, the route flags
(``dsh.cli.options``: ``--provider``, ``--model``, ``--base-url``, ``--script``, ``--replay``,
``--context-window``, ``--compaction``, ``--summarizer``, ``--summarizer-base-url``) and the
approval flags (``--yes``, ``--allow``), as ``dsh`` and ``dsh run`` take them: the browser client.

Prints the launch URL (with its access token) and serves until Ctrl-C (exit 0), SIGTERM or
SIGHUP (a closed terminal; exit 128 + the signal), each a graceful shutdown: running turns are
cancelled cleanly (``dsh.web.server``). The token can come from
``DSH_WEB_TOKEN`` instead of ``--token`` (a flag is visible to everyone in ``ps``). Binding
anything but a loopback address needs an explicit token of at least 32 characters. A loopback
server answers only to its own ``Host`` names (no DNS rebinding).

Each session runs with its own workspace's settings (``dsh.web.workspace_settings``: what
``dsh run --session`` there would give it, the route flags over them), not with the trusted
project config of the directory the server started in. The browser it opens starts from a
helper with the environment commands get (``open_browser``: no API key, no ``DSH_WEB_TOKEN``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading

import click

from dsh.agent import session_settings
from dsh.agent.mcp_servers import close_mcp_servers, start_session_mcp_servers, tool_secrets
from dsh.agent.runtime import Route
from dsh.agent.wiring import check_room
from dsh.cli import context
from dsh.cli.options import ApprovalFlags, RouteFlags, approval_options, route_options
from dsh.config import Settings, load_settings
from dsh.errors import ConfigError, DshError, WindowTooSmall
from dsh.tools.secrets import add_own_secret
from dsh.web.app import create_app
from dsh.web.auth import (
    WEAK_TOKEN_CHARS,
    LaunchCodes,
    check_bind,
    check_token_text,
    is_loopback,
    loopback_hosts,
    new_token,
)
from dsh.web.runtime import WebRuntime
from dsh.web.server import bind_socket, make_server, url_host
from dsh.web.sessions import SessionRegistry
from dsh.web.warning_feed import WarningFeed
from dsh.web.workspace_settings import WorkspaceSettings

log = logging.getLogger("dsh.web")


@click.command("web")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=3080,
    show_default=True,
    help="Port to listen on (0: any free one).",
)
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.option(
    "--token",
    default=None,
    help="Access token (default: $DSH_WEB_TOKEN, else a random one). Prefer the variable: "
    "a flag shows in `ps`.",
)
@route_options
@approval_options
def web(
    host: str,
    port: int,
    no_open: bool,
    token: str | None,
    route_flags: RouteFlags,
    approval_flags: ApprovalFlags,
) -> None:
    """Serve the browser client for your sessions on this machine.

    Sessions started or continued from the page run on the route the route flags give (as
    `dsh run`'s and the terminal UI's do, they override a continued session's recorded
    settings), else on the configured one. --yes and --allow set their approval policy (over
    tools.approval) for as long as the server runs.
    """
    feed = WarningFeed()  # from the start: the pages get what starting the server warned
    try:
        with feed.installed():
            _serve(host, port, no_open, token, route_flags, approval_flags, feed)
    except DshError as exc:
        context.fail(exc)


def _serve(
    host: str,
    port: int,
    no_open: bool,
    token: str | None,
    route_flags: RouteFlags,
    approval_flags: ApprovalFlags,
    feed: WarningFeed,
) -> None:
    if token is None:
        token = os.environ.get("DSH_WEB_TOKEN") or None
    if token is not None:
        check_token_text(token)
        if len(token) < WEAK_TOKEN_CHARS:
            log.warning(
                "the web token is shorter than %d characters; easy to guess", WEAK_TOKEN_CHARS
            )
    check_bind(host, explicit_token=token is not None, token=token)
    secret = token or new_token()
    add_own_secret("dsh web token", secret)  # masked in tool output: `ps aux` shows a --token
    overrides = route_flags.overrides()
    here = context.cwd().resolve()
    settings = load_settings(cwd=here, overrides=overrides, choose_provider=True)
    store = context.store(settings)
    replayed = context.replayed_session(store, route_flags)
    if replayed is not None:  # a new session starts from the recording's settings, as in dsh run
        resolved = context.session_settings(store, replayed, settings, overrides, switch=True)
        settings = resolved.settings
    recording = session_settings.read(store, replayed) if replayed is not None else None
    # a session in another workspace runs with that workspace's settings, not these
    workspaces = WorkspaceSettings(overrides, started=(here, settings), recorded=recording)
    runtime = WebRuntime(
        settings,
        store=store,
        overrides=overrides,
        script=route_flags.script,
        replay_from=replayed,
        yes=approval_flags.yes,
        allow=approval_flags.allow,
        workspaces=workspaces,
        echo_waits=context.warn,  # a server loading its model: said, as dsh run says it
    )
    route: Route | None = None
    try:
        route = runtime.route()
    except ConfigError as exc:
        log.warning("%s — sessions can be browsed, but prompts will fail", exc)
    else:
        if route.notice is not None:
            log.warning("%s", route.notice)  # an endpoint that did not report its window, …
    registry = SessionRegistry(store, runtime, default_cwd=here, warnings=feed)
    start_session_mcp_servers(settings, here)  # a new session's, early
    if route is not None:  # a new session's window, with the servers' tools: said at start
        try:
            check_room(settings, route, here)
        except WindowTooSmall as exc:
            log.warning("%s — sessions can be browsed, but prompts will fail", exc)
    sock = bind_socket(host, port)
    bound = sock.getsockname()[1]
    hosts = loopback_hosts(host, bound) if is_loopback(host) else None
    launch_codes = LaunchCodes()
    app = create_app(registry, token=secret, allowed_hosts=hosts, launch_codes=launch_codes)
    origin = f"http://{url_host(host)}:{sock.getsockname()[1]}"
    click.echo(f"dsh web: open {origin}/?token={secret}")
    click.echo("dsh web: Ctrl-C stops the server", err=True)
    if not no_open:  # a browser's command line is seen in ps: it gets a one-use code instead
        browser_url = f"{origin}/?launch={launch_codes.new()}"
        threading.Timer(0.5, open_browser, (browser_url, settings)).start()
    server = make_server(app)
    try:
        with contextlib.suppress(KeyboardInterrupt):  # a Ctrl-C before or after serving
            server.run(sockets=[sock])
    finally:
        close_mcp_servers()
    signalled = server.stopped_by if server.stopped_by != signal.SIGINT else None
    with contextlib.suppress(OSError):  # after a SIGHUP the terminal may be gone
        by = f" by {signal.Signals(signalled).name}" if signalled is not None else ""
        click.echo(f"dsh web: stopped{by}", err=True)
    if signalled is not None:  # SIGTERM, SIGHUP: what a shell sees of a signalled process
        sys.exit(128 + signalled)


OPEN_IN_BROWSER = (
    "import sys, webbrowser; sys.exit(0 if webbrowser.open_new_tab(sys.argv[1]) else 1)"
)
"""The helper ``open_browser`` runs: Python's ``webbrowser`` (``$BROWSER``, else the desktop's
browser), quietly (no browser found: nothing said; the URL line was printed)."""


def open_browser(url: str, settings: Settings) -> None:
    """Open ``url`` in the user's browser from a helper process (``python -I``) started with the
    environment commands get (``tool_secrets``' scrubbed one) without dsh's own variables: no
    API key, no ``DSH_WEB_TOKEN``. A browser that was not already running keeps the environment
    it starts with for its whole life, and any process of the user's can read it in
    ``/proc/PID/environ`` (``webbrowser.open`` in this process would pass dsh's whole one). The
    helper runs in a session of its own (the Ctrl-C that stops the server does not reach the
    browser it started) and is reaped in a daemon thread (a browser started in the foreground
    keeps it until it quits; the server does not wait for it)."""
    scrubbed = tool_secrets(settings).scrubbed_environment()
    environment = {n: v for n, v in scrubbed.items() if not n.upper().startswith("DSH_")}
    command = [sys.executable, "-I", "-c", OPEN_IN_BROWSER, url]
    try:
        helper = subprocess.Popen(
            command, env=environment, stdin=subprocess.DEVNULL, start_new_session=True
        )
    except OSError as exc:
        log.warning("could not open a browser (%s); open the URL above", exc)
        return
    threading.Thread(target=helper.wait, name="dsh-browser", daemon=True).start()
