"""``/rewind`` and ``/fork`` in the terminal UI (``dsh.agent.fork``). ``/rewind`` picks one of the
session's prompts (newest first, filtered by typing; ``/rewind N`` names turn N) and opens a new
session that copies the log up to the start of that turn, that prompt back in the composer to
send again or change; ``/fork`` copies the whole session and opens the copy. The session left
stays as it was, listed and resumable; the workspace's files stay as the later turns left them
(the note says so; ``/undo`` in the original takes back its last turn's edits).

A prompt sent after ``!cmd`` runs is listed, and put back, as what was typed
(``dsh.transcript.shell_blocks``); the commands' output it was sent with waits again for the
next prompt, as a ``!cmd``'s does. The copy runs on the route this session ran on (a ``/model``
choice too, its window with it), and records it (``dsh.agent.fork``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.agent.fork import TurnPrompt, fork_note, fork_session, turn_prompts
from dsh.agent.settings_record import route_snapshot
from dsh.errors import DshError, error_line, printable_line
from dsh.transcript.plan import first_line
from dsh.transcript.shell_blocks import split_blocks, typed_part
from dsh.tui.filtered_picker import FilteredPicker

if TYPE_CHECKING:
    from dsh.tui.app import DshApp

NO_TURNS = "Nothing to rewind: no prompt has started a turn in this session yet."
NO_SESSION = "Nothing to fork: no session yet (the next prompt starts one)."


class TurnPicker(FilteredPicker):
    """The session's prompts, newest first; dismisses with the turn number (as text)."""

    ROWS_NAMED = "prompts"

    def __init__(self, turns: list[TurnPrompt]) -> None:
        rows = [(str(t.turn), turn_row(t, turns)) for t in reversed(turns)]
        title = (
            "Rewind to before a prompt: enter opens a copy of the session up to it, the prompt "
            "in the composer (this session stays as it is); esc closes"
        )
        super().__init__(rows, title)


def turn_row(turn: TurnPrompt, turns: list[TurnPrompt]) -> str:
    """``turn N  what was typed``, the numbers right-aligned to the widest of ``turns``."""
    width = len(str(max(t.turn for t in turns)))
    return f"turn {turn.turn:>{width}}  {first_line(typed_part(turn.prompt))}"


def rewind_command(app: DshApp, arg: str) -> None:
    """``/rewind [N]``."""
    session = app.controller.session
    turns = turn_prompts(session.events) if session is not None else []
    if not turns:
        app.note(NO_TURNS)
        return
    if not arg:
        app.push_screen(
            TurnPicker(turns), callback=lambda turn: fork_to(app, int(turn)) if turn else None
        )
        return
    if not arg.isdigit():
        app.note(f"usage: /rewind [N] (a turn number, not {printable_line(arg)!r})")
        return
    fork_to(app, int(arg))


def fork_command(app: DshApp) -> None:
    """``/fork``: the whole session copied, the copy opened."""
    if app.controller.session is None:
        app.note(NO_SESSION)
        return
    fork_to(app, None)


def fork_to(app: DshApp, before_turn: int | None) -> None:
    """Copy the open session (up to turn ``before_turn``), open the copy, and say so; the
    rewound prompt goes into the composer."""
    controller = app.controller
    session, route = controller.session, controller.route
    if session is None:
        return
    try:
        running = route_snapshot(session, controller.settings, route) if route else None
        made = fork_session(
            controller.options.store, session.id, before_turn=before_turn, settings=running
        )
        items = controller.open(made.session_id)
    except DshError as exc:
        app.note(f"error: {error_line(str(exc))}")
        return
    if route is not None and controller.route != route:
        # the parent's route as it ran (a ``/model`` choice, its window), over the flags
        controller.route = route
    app.switched(items, fork_note(made) + f" /resume {made.parent} opens the original again.")
    if made.before is not None:
        blocks, typed = split_blocks(made.before.prompt)
        app.prompt_box.value = typed
        work = app.work
        for block in blocks:  # the ``!cmd`` output it was sent with goes again with it
            work.shell_context.append(block)
            note = f"{block}\n(sent to the model with your next prompt, as it was with this one)"
            work.shell_notes.append(app.transcript.add_note(note))
