"""``dsh`` with no subcommand, and ``dsh --resume [ID]``: the terminal UI.

The lead wires it from ``dsh.cli.main``::

    launch(resume=None, new=False)   # dsh: a new session in the current directory
    launch(resume="", new=False)     # dsh --resume: a picker over every session (in a
                                     # terminal), else the session used last here
    launch(resume=None, new=False, last=True)   # dsh --continue: the session used last here
    launch(resume="ID", new=False)   # dsh --resume ID: that session (a unique prefix is enough)

``new=True`` asks for a fresh session explicitly (a ``--new`` flag); it cannot be combined with
``resume``. Errors before the UI starts (unknown session, bad configuration) are raised as
``DshError`` for the command group to print; a missing API key is shown inside the UI.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dsh.agent.mcp_servers import close_mcp_servers, start_session_mcp_servers
from dsh.cli import context
from dsh.cli.options import ApprovalFlags, RouteFlags
from dsh.cli.warning_lines import HeldWarnings
from dsh.config import Settings, load_settings
from dsh.errors import WARNING_LINE_CHARS, DshError, SessionNotFoundError, UsageError, error_line
from dsh.store import EventStore
from dsh.surface import Session

if TYPE_CHECKING:
    from dsh.tui.app_warnings import WarningLog


def launch(
    resume: str | None,
    new: bool,
    workspace_dir: Path | None = None,
    *,
    route_flags: RouteFlags | None = None,
    approval_flags: ApprovalFlags | None = None,
    settings_overrides: Mapping[str, Mapping[str, Any]] | None = None,
    greeting: str | None = None,
    on_quit: Callable[[str], Sequence[str]] | None = None,
    last: bool = False,
    first_prompt: str | None = None,
) -> None:
    """Run the terminal UI until the person quits; exits with the app's return code.

    A resumed session runs its tools in its own recorded workspace unless ``workspace_dir``
    (``--cwd``) says otherwise; that choice is logged (``session/workspace``), and the UI says
    where they run when that is not the current directory (``TuiOptions.started_in``).
    ``route_flags`` are the route flags (``dsh.cli.options``: ``--provider``, ``--replay``,
    ``--compaction``, …), mapped onto settings as ``dsh run`` maps them; ``settings_overrides``
    go under them (the demo's small window and budgets). Both win over a resumed session's
    recorded settings. ``approval_flags`` (``--yes``, ``--allow``) set the approval policy over
    ``tools.approval`` for this process (a session does not record them; ``/approval`` changes
    the mode later). ``on_quit`` says what to print about the last session once the UI quits
    (default: ``resume_hint``, how to open it again). ``last`` (``--continue``) opens the
    session used last in the workspace, without a picker. ``first_prompt`` (``dsh PROMPT``) is
    sent as the first turn once the session is open."""
    from dsh.tui import DshApp, TuiOptions  # Textual is imported only for the UI
    from dsh.tui.app_warnings import WarningLog
    from dsh.tui.factories import settings_route_factory

    if new and resume is not None:
        raise UsageError("--new and --resume cannot be combined")
    if last and resume is not None:
        raise UsageError("--continue and --resume cannot be combined")
    route_flags = route_flags or RouteFlags()
    approval_flags = approval_flags or ApprovalFlags()
    shown = WarningLog()  # the picker's warnings stay listed by the UI's /warnings
    with HeldWarnings() as held:  # the UI shows them: a line printed now it would hide
        store = context.store()
        here = (workspace_dir or context.cwd()).resolve()
        session_id: str | None = None
        if last:
            session_id = context.last_used_session_id(store, str(here))
        elif resume:
            session_id = context.resolve_session_id(store, resume)
        elif resume is not None:
            if interactive():
                refuse_without_terminal()  # the picker is drawn as the UI is

                def refuse(chosen: str) -> str | None:
                    return _cannot_open(
                        store, chosen, workspace_dir, settings_overrides, route_flags
                    )

                with held.paused():  # the picker shows its own
                    session_id = _picked(store, shown, refuse)
            else:
                session_id = context.last_used_session_id(store, str(here), verb="resume")
            if session_id is None:
                click.echo("no session chosen")
                return
        flags = _layered(settings_overrides or {}, route_flags.overrides())
        opening = _opening(store, session_id, workspace_dir, flags, route_flags)
    workspace, settings, store, replayed = opening
    refuse_without_terminal()  # after the errors of what was asked, before anything is logged
    picked = {entry.text for entry in shown.entries}  # the picker showed those already
    told = [w for w in held.lines if error_line(w, WARNING_LINE_CHARS) not in picked]
    load_warnings = tuple(told)
    if session_id is not None and workspace_dir is not None:
        with Session.open(store, session_id, writable=True) as session:
            load_warnings += tuple(session.warnings)  # what this open repaired: the UI tells it
            context.record_workspace(session, workspace)
    started_in = context.cwd().resolve()
    options = TuiOptions(
        settings=settings,
        store=store,
        workspace=workspace,
        resume=session_id,
        started_in=started_in if session_id and workspace.resolve() != started_in else None,
        workspace_from_flag=workspace_dir is not None,
        route_factory=settings_route_factory(
            settings, route_flags.script, replay_from=replayed, store=store
        ),
        greeting=greeting,
        overrides=flags,
        load_warnings=load_warnings,
        yes=approval_flags.yes,
        allow=approval_flags.allow,
    )
    # the MCP servers start before the UI takes the terminal: their warnings print as lines,
    # and the first turn does not wait for them
    start_session_mcp_servers(settings, workspace)
    app = DshApp(options, warnings=shown)
    app.first_prompt = first_prompt
    try:
        app.run()
    finally:
        close_mcp_servers()
    if app.last_session_id is not None:
        said: Sequence[str]
        if on_quit is None:
            said = resume_hint(app.last_session_id, script=route_flags.script, replay=replayed)
        else:
            said = on_quit(app.last_session_id)
        for line in said:
            click.echo(line)
    if app.return_code:
        sys.exit(app.return_code)


def _opening(
    store: EventStore,
    session_id: str | None,
    workspace_dir: Path | None,
    flags: Mapping[str, Mapping[str, Any]],
    route_flags: RouteFlags,
) -> tuple[Path, Settings, EventStore, str | None]:
    """What the UI opens ``session_id`` (None: a new session) with: its workspace, its
    settings, the store they name and the session ``--replay`` serves; ``DshError`` for what
    keeps it from opening."""
    workspace = context.session_workspace(store, session_id, workspace_dir)
    # a new session with no provider named runs on the one whose key is set (said once)
    settings = load_settings(cwd=workspace, overrides=flags, choose_provider=session_id is None)
    store = context.store(settings)
    replayed = context.replayed_session(store, route_flags)
    # a resumed session runs with its own recorded settings; a flag overrides them (logged); a
    # new one replaying a recorded one starts from that one's. A recorded value no longer valid
    # is said by the UI, as it opens the session, and a flag's change as the UI logs it (a line
    # printed now would be hidden by the UI until it quits)
    resolved = context.session_settings(
        store,
        context.settings_source(session_id, replayed),
        settings,
        flags,
        switch=True,
        say_replaced=False,
    )
    return workspace, resolved.settings, store, replayed


def _cannot_open(
    store: EventStore,
    session_id: str,
    workspace_dir: Path | None,
    settings_overrides: Mapping[str, Mapping[str, Any]] | None,
    route_flags: RouteFlags,
) -> str | None:
    """Why the picker's choice ``session_id`` cannot be opened by this ``dsh`` (None: it can),
    in one line: what ``launch`` would stop at once the picker closed — its workspace gone,
    its settings or flags refused, a keyless route (scripted, replay) recorded without what
    feeds it. Said, not printed: the picker shows it and stays."""
    from dsh.agent.runtime import missing_feed

    flags = _layered(settings_overrides or {}, route_flags.overrides())
    try:
        _, settings, store, replayed = _opening(
            store, session_id, workspace_dir, flags, route_flags
        )
    except DshError as exc:
        return error_line(str(exc))
    return missing_feed(settings, script=route_flags.script, replay_from=replayed, store=store)


def resume_hint(
    session_id: str, *, script: Path | None = None, replay: str | None = None
) -> list[str]:
    """What the UI prints about its last session when it quits: how to open it again. The
    session records its route and settings, not what feeds a keyless provider: the ``script``
    or the recorded session to ``replay`` it ran with is repeated (the script's path made
    absolute)."""
    words = ["dsh", "--resume", session_id]
    if script is not None:
        words += ["--script", str(script.resolve())]
    if replay is not None:
        words += ["--replay", replay]
    return [f"resume with: {shlex.join(words)}"]


def _layered(
    below: Mapping[str, Mapping[str, Any]], above: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The settings overrides ``above`` put over ``below``, key by key in each section."""
    return {
        section: {**below.get(section, {}), **above.get(section, {})}
        for section in {*below, *above}
    }


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


def _picked(
    store: EventStore, shown: WarningLog, refuse: Callable[[str], str | None]
) -> str | None:
    """The session chosen in the picker (None: closed without choosing); the warnings it
    showed are added to ``shown``; a session ``refuse`` gives a reason for is not chosen (the
    picker says why and stays)."""
    from dsh.tui.picker import pick_session

    if not store.list():
        raise SessionNotFoundError("no session to resume (see `dsh sessions list --all`)")
    return pick_session(store, shown, refuse)
