"""What each slash command does in the terminal UI (``/help`` … ``/warnings``, ``/approval``):
the app parses a submitted line (``dsh.tui.commands``) and hands a command here.

``SlashCommands`` works through the app it serves: notes in the transcript, the status bar,
the turn slot a ``/compact`` runs in, and the session shown (``/sessions``, ``/resume``,
``/new``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from dsh.agent.approval_command import changed_note, chosen_mode, shown_note
from dsh.agent.model_command import model_name
from dsh.agent.retry_command import last_turn_retry
from dsh.agent.session_runner import COMPACT_CANCELLED
from dsh.errors import SHOWN_AS_ERROR, DshError, UsageError, error_line, printable_line
from dsh.tui.commands import COMMANDS, HELP, Command, closest_command, waits
from dsh.tui.context_view import context_text, cost_text
from dsh.tui.copy_command import copy_command
from dsh.tui.diff_view import show_workspace_diff
from dsh.tui.model_choice import run_model_command
from dsh.tui.rewind import fork_command, rewind_command
from dsh.tui.route_wait import new_session, open_session
from dsh.tui.sessions_view import session_picker, sessions_text, title_command
from dsh.tui.undo_queued import refusal

if TYPE_CHECKING:
    from dsh.tui.app import DshApp

log = logging.getLogger("dsh.tui")


class SlashCommands:
    """The slash commands of one app."""

    def __init__(self, app: DshApp) -> None:
        self.app = app

    def unknown(self, name: str, draft: str, *, queued: bool) -> None:
        """Say so (naming the closest command) and keep the draft, selected: typing replaces
        it (a command typed next is not glued to it), an arrow key keeps it to mend."""
        app = self.app
        box = app.prompt_box
        if queued:  # taken from the queue to be sent: back in the box, not lost
            box.put_back(draft)
        elif box.text != draft:
            box.value = draft
        names = (*COMMANDS, *app.prompt_commands.current().names)
        close = closest_command(name, names)
        guess = f" Did you mean /{close}?" if close else ""
        app.note(
            f"Unknown command /{printable_line(name)}.{guess} /help lists the commands "
            "(// sends /)."
        )
        box.select_all()

    def run(self, command: Command) -> None:
        app, name, arg = self.app, command.name, command.arg
        if name == "help":
            yours = app.prompt_commands.current().help_text()
            app.note(f"{HELP}\n{yours}" if yours else HELP)
        elif name == "quit":
            app.call_later(app.action_quit)
        elif name == "sessions":
            self.pick_session()
        elif name == "title" and not (arg and app.running):
            app.note(title_command(app.controller, arg))
        elif name == "model":
            self.model(arg)
        elif name in ("context", "cost"):
            app.note((context_text if name == "context" else cost_text)(app.controller))
        elif name == "warnings":
            app.note(app.warnings.text())
        elif name == "approval":
            self.approval(arg)
        elif name == "copy":
            copy_command(app, arg)
        elif name == "diff":
            workspace = app.controller.options.workspace
            app.run_worker(show_workspace_diff(app, workspace), group="diff")
        elif app.running and waits(None, command):  # the app queues these: not reached
            app.note(f"/{name} was not run: a turn is running (esc cancels it).")
        elif name == "retry":
            self.retry()
        elif name == "compact":
            app.start_work(self.compact(arg or None))
        elif name == "undo":
            app.start_work(self.undo(arg, after_turn=app.work.sent_after_turn))
        elif name == "resume":
            self.resume(arg)
        elif name in ("new", "clear"):
            self.new_session()
        elif name == "rewind":
            rewind_command(app, arg)
        elif name == "fork":
            fork_command(app)
        else:
            app.note(f"Unknown command /{name}; /help lists the commands.")

    async def compact(self, focus: str | None) -> None:
        app = self.app
        app.set_busy("compacting", cancels=True)  # esc cancels it (the pass is not kept)
        try:
            text = await app.controller.compact(focus)
            if not app.controller.logged_answer(text):  # a logged answer is shown as a note
                app.note(text)
            if text == COMPACT_CANCELLED:
                app.work.failed()
        except DshError as exc:
            app.work.failed()
            app.note(f"error: {error_line(str(exc))}")
        finally:
            app.set_busy(None)
            app.measure_context()

    async def undo(self, arg: str, *, after_turn: bool = False) -> None:
        """``/undo``: the last turn's file edits taken back, all or nothing; in the work slot,
        like a ``/compact`` (a draft sent meanwhile waits for it), its file work off the loop.
        ``after_turn``: it was queued while a turn ran, and takes back that turn's edits only
        (``dsh.tui.undo_queued``)."""
        app = self.app
        refused = refusal(app.controller.session) if after_turn and not arg else None
        if refused is not None:
            app.note(refused)
            return
        app.set_busy("undoing…")
        try:
            text = await app.controller.undo(arg)
        except DshError as exc:
            app.work.failed()
            app.note(f"error: {error_line(str(exc))}")
            return
        except Exception as exc:  # a bug: said here (its command is answered), the app goes on
            app.work.failed()
            failure = f"internal error: {error_line(exc)}"
            log.exception("/undo failed: %s", failure, extra={SHOWN_AS_ERROR: True})
            app.note(failure)
            return
        finally:
            app.set_busy(None)
        if not app.controller.logged_answer(text):  # a logged answer is shown as a note
            app.note(text)
        app.measure_context()

    def retry(self) -> None:
        """``/retry``: the last turn's prompt sent again when that turn did not complete, else
        a note saying why not (``dsh.agent.retry_command``, the words ``dsh web`` says too)."""
        retry = last_turn_retry(self.app.controller.session)
        self.app.note(retry.note)
        if retry.prompt is not None:
            self.app.work.send(retry.prompt)

    def pick_session(self) -> None:
        """``/sessions``: the picker over every session; the chosen one opens here."""
        app = self.app
        picker = session_picker(app.controller)
        if picker is None:
            app.note("No sessions yet.")
            return

        def chosen(session_id: str | None) -> None:
            current = app.controller.session
            if session_id is not None and (current is None or current.id != session_id):
                self.resume(session_id)

        app.push_screen(picker, callback=chosen)

    def resume(self, wanted: str) -> None:
        """``/resume ID`` opens that session here (one recorded in another workspace is
        refused: its tools would run in the wrong directory); ``/resume`` lists this
        workspace's sessions."""
        from dsh.store import resolve_session_id

        app = self.app
        if not wanted:
            app.note(sessions_text(app.controller))
            return
        controller = app.controller
        try:
            session_id = resolve_session_id(controller.options.store, wanted)
            if controller.session is not None and controller.session.id == session_id:
                app.note(f"Session {session_id} is already open.")
                return
            elsewhere = controller.recorded_elsewhere(session_id)
            if elsewhere is not None:
                here = controller.options.workspace
                app.note(
                    f"Session {session_id} ran in {elsewhere}, not here; its tools would run in "
                    f"the wrong directory. Quit and run `dsh --resume {session_id}` (its own "
                    f"workspace) or `dsh --resume {session_id} --cwd {here}`."
                )
                return
            if controller.resolves_off_the_loop:  # its route may wait for its server
                open_session(app, session_id, f"Resumed session {session_id}.")
                return
            items = controller.open(session_id)
        except DshError as exc:
            app.note(f"error: {error_line(str(exc))}")
            return
        app.switched(items, f"Resumed session {session_id}.")

    def new_session(self) -> None:
        """``/new`` (``/clear``): a new session here, as ``dsh`` starts one (the configured
        model and settings, every approval asked again); the session left stays in the store,
        listed and resumable. The composer keeps its history of prompts."""
        app, controller = self.app, self.app.controller
        if controller.session is None:
            app.note("This is a new session already: the next prompt starts it.")
            return

        def left(session_id: str | None) -> None:
            app.switched(
                [],
                f"New session (model {controller.model}). The one you left stays listed: "
                f"/resume {session_id} opens it again.",
                seed=False,
            )

        if controller.resolves_off_the_loop:  # its route may wait for its server
            new_session(app, left)
            return
        try:
            left(controller.new_session())
        except DshError as exc:
            app.note(f"error: {error_line(str(exc))}")

    def model(self, arg: str) -> None:
        """``/model NAME`` switches the model for the next turns, when the server lists it;
        ``/model`` names it and offers the server's models in a picker (the name as ``dsh
        web``'s composer takes it: ``dsh.agent.model_command.model_name``). The list is asked
        in a worker (``dsh.tui.model_choice``), bounded; a provider with none answers at once."""
        try:
            name = model_name(arg)
        except UsageError as exc:
            self.app.note(f"error: {error_line(str(exc))}")
            return
        run_model_command(self.app, name)

    def approval(self, arg: str) -> None:
        """``/approval MODE`` decides the later tool calls by MODE for the rest of this run (the
        config file stays as it is); ``/approval`` names the mode (``dsh.agent.approval_command``:
        the words ``dsh web``'s composer says too)."""
        app, controller = self.app, self.app.controller
        if not arg:
            app.note(shown_note(controller.approval, controller.policy.allow))
            return
        try:
            mode = chosen_mode(arg)
        except UsageError as exc:
            app.note(str(exc))
            return
        controller.choose_approval(mode)
        app.note(changed_note(controller.approval, controller.policy.allow))
        app.update_status()
