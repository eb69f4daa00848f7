"""``dsh undo [--session ID] [--dry-run]``: take back the file changes the model made in its
last turn (``dsh.agent.undo``) and print what was reverted, or why not; exit 1 when refused.

The default session is the one ``dsh --continue`` opens: of the sessions started in the current
directory, the one used last. The session is opened for writing (its writer lock), so a
session another process is running is refused; ``--dry-run`` opens it read-only and logs nothing.
What the open repaired (an undo a killed process left half done, cleaned up after) is printed
first, as a warning line each. A Ctrl-C (or SIGTERM, SIGHUP) waits until the undo has changed
every file or taken its changes back (``dsh.agent.held_interrupts``); its answer is printed, then
dsh exits 130 (143, 129) as interrupted.
"""

from __future__ import annotations

import click

from dsh.agent.undo import undo_last_turn
from dsh.cli import context, termination
from dsh.errors import SessionNotFoundError
from dsh.events import CommandDoneEvent
from dsh.surface import Session
from dsh.tools.terminal_text import printable_text


@click.command("undo")
@click.option(
    "--session", "session_id", default=None, help="The session (default: the one used last here)."
)
@click.option("--dry-run", is_flag=True, help="List what would be reverted; change nothing.")
def undo(session_id: str | None, dry_run: bool) -> None:
    """Undo the file changes the model made in its last turn."""
    store = context.store()
    if session_id is None:
        here = str(context.cwd().resolve())
        try:
            resolved = context.last_used_session_id(store, here)
        except SessionNotFoundError:
            raise SessionNotFoundError(
                f"no session started in {here}; give --session ID (see `dsh sessions list --all`)"
            ) from None
    else:
        resolved = context.resolve_session_id(store, session_id)
    session = Session.open(store, resolved, writable=not dry_run)
    for warning in session.warnings:  # what this open repaired: a killed undo cleaned up after
        context.warn(warning)
    logged = len(session.events)
    try:
        termination.install()  # SIGTERM / SIGHUP stop it like Ctrl-C
        result = undo_last_turn(session, dry_run=dry_run)
    except KeyboardInterrupt:  # held until the undo was done or taken back, and answered
        for event in session.events[logged:]:
            if isinstance(event, CommandDoneEvent):
                click.echo(printable_text(event.data.text))
        if termination.stopped_by() is None:
            raise
        raise SystemExit(termination.exit_status()) from None
    finally:
        session.close()
    click.echo(printable_text(result.text))  # the paths a log named
    if not result.ok:
        raise SystemExit(1)
