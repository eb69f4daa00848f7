"""``dsh sessions fork ID [--before-turn N]``: a new session copying ID's log, whole or up to the
start of turn N (``dsh.agent.fork``), to continue another way; the original stays as it was.
``--turns`` lists the turns that can be cut before, with what was typed to start them (not the
``!cmd`` output sent ahead of it), numbers aligned. A whole copy of a session running a turn
elsewhere ends with its last finished turn (the line says so)."""

from __future__ import annotations

import click

from dsh.agent.fork import fork_note, fork_session, turn_prompts
from dsh.cli import context
from dsh.errors import printable_line
from dsh.surface import Session
from dsh.tools.terminal_text import printable_text
from dsh.transcript.plan import first_line
from dsh.transcript.shell_blocks import typed_part

PROMPT_SHOWN = 100
"""Characters of a prompt ``--turns`` shows (its first line)."""


@click.command("fork")
@click.argument("session_id")
@click.option(
    "--before-turn",
    type=click.IntRange(min=1),
    default=None,
    help="Copy the log up to the start of this turn (default: all of it); --turns lists them.",
)
@click.option("--turns", "list_turns", is_flag=True, help="List the turns and their prompts.")
def fork(session_id: str, before_turn: int | None, list_turns: bool) -> None:
    """Copy a session into a new one, whole or up to a turn, to continue it another way.

    A whole copy of a session running a turn elsewhere ends with its last finished turn."""
    store = context.store()
    wanted = context.resolve_session_id(store, session_id)
    if list_turns:
        with Session.open(store, wanted) as session:
            turns = turn_prompts(session.events)
        width = len(str(max((turn.turn for turn in turns), default=0)))
        for turn in turns:
            line = printable_line(first_line(typed_part(turn.prompt)))
            shown = line if len(line) <= PROMPT_SHOWN else line[: PROMPT_SHOWN - 1] + "…"
            click.echo(f"turn {turn.turn:>{width}}  {shown}")
        if not turns:
            click.echo(f"session {wanted} has no turn started by a prompt yet")
        return
    made = fork_session(store, wanted, before_turn=before_turn)
    click.echo(fork_note(made))
    if made.before is not None:
        click.echo(f"The prompt of turn {made.before.turn}, to send again or change:")
        click.echo(printable_text(made.before.prompt))
    click.echo(f"Continue it: dsh --resume {made.session_id}")
