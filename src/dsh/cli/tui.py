"""``dsh`` with no subcommand, and ``dsh --resume [ID]``: the terminal UI.

The lead wires it from ``dsh.cli.main``::

    launch(resume=None, new=False)   # dsh: a new session in the current directory
    launch(resume="", new=False)     # dsh --resume: a picker over every session (in a
                                     # terminal), else this directory's most recent session
    launch(resume="ID", new=False)   # dsh --resume ID: that session (a unique prefix is enough)

``new=True`` asks for a fresh session explicitly (a ``--new`` flag); it cannot be combined with
``resume``. Errors before the UI starts (unknown session, bad configuration) are raised as
``DshError`` for the command group to print; a missing API key is shown inside the UI.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dsh.agent.mcp_servers import close_mcp_servers, start_session_mcp_servers
from dsh.cli import context
from dsh.config import load_settings
from dsh.errors import SessionNotFoundError, UsageError
from dsh.store import EventStore
from dsh.surface import Session

if TYPE_CHECKING:
    from dsh.tui.app_warnings import WarningLog


def latest_session_id(store: EventStore, cwd: str) -> str:
    """The most recently created session started in ``cwd``."""
    headers = [h for h in store.list() if h.cwd == cwd]
    if not headers:
        raise SessionNotFoundError(f"no session to resume in {cwd} (see `dsh sessions list --all`)")
    return max(headers, key=lambda h: (h.created_at, h.id)).id


def launch(
    resume: str | None,
    new: bool,
    workspace_dir: Path | None = None,
    *,
    provider: dict[str, Any] | None = None,
    compaction: dict[str, Any] | None = None,
    script: Path | None = None,
    greeting: str | None = None,
) -> None:
    """Run the terminal UI until the person quits; exits with the app's return code.

    A resumed session runs its tools in its own recorded workspace unless ``workspace_dir``
    (``--cwd``) says otherwise; that choice is logged (``session/workspace``). ``provider``
    overrides the provider settings (the ``--provider/--model/--base-url`` flags, see
    ``context.provider_overrides``), ``compaction`` the compaction settings (the demo's small
    budgets); ``script`` feeds the keyless scripted provider."""
    from dsh.tui import DshApp, TuiOptions  # Textual is imported only for the UI
    from dsh.tui.app_warnings import WarningLog
    from dsh.tui.controller import settings_route_factory

    if new and resume is not None:
        raise UsageError("--new and --resume cannot be combined")
    store = context.store()
    here = (workspace_dir or context.cwd()).resolve()
    session_id: str | None = None
    shown = WarningLog()  # the picker's warnings stay listed by the UI's /warnings
    if resume:
        session_id = context.resolve_session_id(store, resume)
    elif resume is not None:
        if interactive():
            refuse_without_terminal()  # the picker is drawn as the UI is
            session_id = _picked(store, shown)
        else:
            session_id = latest_session_id(store, str(here))
        if session_id is None:
            click.echo("no session chosen")
            return
    workspace = context.session_workspace(store, session_id, workspace_dir)
    flags = {"provider": provider or {}, "compaction": compaction or {}}
    settings = load_settings(cwd=workspace, overrides=flags)
    store = context.store(settings)
    # a resumed session runs with its own recorded settings; a flag overrides them (logged). A
    # recorded value no longer valid is said by the UI, as it opens the session (a line printed
    # now would be hidden by the UI until it quits)
    settings = context.session_settings(
        store, session_id, settings, flags, switch=True, say_replaced=False
    )
    refuse_without_terminal()  # after the errors of what was asked, before anything is logged
    load_warnings: tuple[str, ...] = ()
    if session_id is not None and workspace_dir is not None:
        with Session.open(store, session_id, writable=True) as session:
            load_warnings = tuple(session.warnings)  # what this open repaired: the UI tells it
            context.record_workspace(session, workspace)
    options = TuiOptions(
        settings=settings,
        store=store,
        workspace=workspace,
        resume=session_id,
        route_factory=settings_route_factory(settings, script),
        greeting=greeting,
        overrides=flags,
        load_warnings=load_warnings,
    )
    # the MCP servers start before the UI takes the terminal: their warnings print as lines,
    # and the first turn does not wait for them
    start_session_mcp_servers(settings, workspace)
    app = DshApp(options, warnings=shown)
    try:
        app.run()
    finally:
        close_mcp_servers()
    if app.last_session_id is not None:
        click.echo(f"resume with: dsh --resume {app.last_session_id}")
    if app.return_code:
        sys.exit(app.return_code)


def refuse_without_terminal() -> None:
    """The UI reads keys from stdin and draws on stderr (Textual's way): without a terminal on
    both it would wait for keys that never come, or draw into a file or a pipe, so it is
    refused in one line (``dsh </dev/null``, ``dsh 2>log``, a cron job, a CI step)."""
    for name, role in (("stdin", "reads keys from"), ("stderr", "draws on")):
        stream = getattr(sys, name)
        if stream is None or not stream.isatty():
            raise UsageError(
                f"the terminal UI {role} {name}, which is not a terminal; run it in one, or "
                "run prompts headless with `dsh run PROMPT` (`dsh run -` reads one from stdin)"
            )


def interactive() -> bool:
    """Both ends are a terminal: a picker can be shown and answered."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def _picked(store: EventStore, shown: WarningLog) -> str | None:
    """The session chosen in the picker (None: closed without choosing); the warnings it
    showed are added to ``shown``."""
    from dsh.tui.picker import pick_session

    if not store.list():
        raise SessionNotFoundError("no session to resume (see `dsh sessions list --all`)")
    return pick_session(store, shown)
