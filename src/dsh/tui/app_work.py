"""The terminal UI's one piece of work at a time: a turn, a ``!cmd``, a ``/compact`` or an
``/undo``, each run as a Textual worker, with what the status bar says meanwhile.

A draft sent while work runs is queued in the composer (``PromptBox.queue``). When the work
ends well (a turn that completed, a ``!cmd`` or ``/compact`` that was not cancelled) the queued
draft is sent as if typed then; a cancel (esc, ctrl+c, esc in the approval prompt), an error,
or a turn that ended any other way puts it back in the box, unsent, for people to look at the
outcome first. A turn's prompt shows in the transcript as it is sent, until it is logged
(``dsh.tui.live_tail``: the compaction pass ahead of the turn may take minutes); a prompt that
never reached the log (refused before it is sent, too large for the context window:
``dsh.agent.room``; a turn that failed before its first step) goes back in the box itself, with
the error as a note.

``!cmd`` output waits in ``shell_context`` and goes to the model ahead of the next prompt. Its
note on the screen shows it until then: once that prompt is sent the prompt shows it, quoted, as
the log holds it (and a session opened again shows it), so the note is taken off, once shown;
a prompt that goes back in the box puts its notes back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from textual.worker import Worker

from dsh.agent.waiting import POLL_EVERY, waiting_notice
from dsh.errors import SHOWN_AS_ERROR, ConfigError, DshError, PromptTooLarge, error_line
from dsh.tools.base import OutputSoFar, ToolOutput
from dsh.tui.notify import Notifier
from dsh.tui.shell_command import (
    context_block,
    masked_command,
    run_shell_command,
    stopped_output,
)

if TYPE_CHECKING:
    from dsh.tui.app import DshApp
    from dsh.tui.blocks import Block

log = logging.getLogger("dsh.tui")

WORKING = "working…"
"""What the status bar says while a turn runs (it names the key that cancels it, and how many
drafts are queued, after it)."""
BUSY_NOW = "Something is running: wait for it (esc cancels a turn)."
QUEUED_ALREADY = "A draft is queued already: esc takes it back to edit or add to it."
NOT_SENT = "The queued draft was not sent: it is back in the box."


class Work:
    """The work slot of one app."""

    def __init__(self, app: DshApp) -> None:
        self.app = app
        self.worker: Worker[None] | None = None
        self.shell_context: list[str] = []
        """``!cmd`` outputs waiting for the next prompt (of the open session only)."""
        self.shell_notes: list[Block] = []
        """The notes that show them on the screen meanwhile."""
        self._failed = False
        self._turn_worker: Worker[None] | None = None
        self.sent_after_turn = False
        """The queued draft being sent waited for a turn (it ended well, just now)."""
        self._waiting: str | None = None
        self._shell_run: asyncio.Future[ToolOutput] | None = None
        """The running ``!cmd`` (``cancel`` stops it)."""
        self._shell_stopped = False
        self.notifier = Notifier(app)
        """The bell when an approval waits or a long turn ends (``dsh.tui.notify``)."""

    @property
    def running(self) -> bool:
        return self.worker is not None and not self.worker.is_finished

    def start(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the slot (callers check ``running`` first)."""
        self._failed = False
        self.worker = self.app.run_worker(work, group="turn", exit_on_error=False)
        self.app.show_keys()

    def failed(self) -> None:
        """The running work did not end well: a queued draft is not sent after it."""
        self._failed = True

    def cancel(self) -> bool:
        """Cancel the running turn or ``/compact``, or stop the running ``!cmd`` (False if none
        runs); a queued draft comes back into the box."""
        app = self.app
        if self._shell_run is not None and not self._shell_run.done():
            self._shell_stopped = True
            self._shell_run.cancel()
        elif not app.controller.cancel():
            return False
        app.set_busy("cancelling…")
        self.failed()
        app.prompt_box.unqueue()
        app.show_keys()
        return True

    def queue(self, draft: str, *, opening: bool = False) -> None:
        """Hold ``draft`` in the composer until the running work ends (``opening``: until the
        session is open), one at a time."""
        box = self.app.prompt_box
        if box.queued is not None:
            self.app.notify(QUEUED_ALREADY)
            return
        box.queue(draft, opening=opening)
        self.app.show_keys()

    def ended(self, worker: Worker[Any]) -> None:
        """A worker changed state: if it was this slot's and has ended, send the queued draft
        (it ended well) or put it back in the box."""
        if worker is not self.worker or not worker.is_finished:
            return
        app = self.app
        box = app.prompt_box
        if box.queued is not None and (self._failed or worker.error is not None):
            box.unqueue()
            app.notify(NOT_SENT)
        self.sent_after_turn = worker is self._turn_worker
        try:
            self.send_queued()
        finally:
            self.sent_after_turn = False
        app.show_keys()

    def send_queued(self) -> None:
        """Send the queued draft (if any) as if typed now."""
        box = self.app.prompt_box
        if box.queued is not None:
            self.app.submit(box.take_queued() or "", queued=True)

    # ---- the kinds of work ----------------------------------------------------------------

    def send(self, prompt: str, draft: str | None = None) -> None:
        """Run a turn on ``prompt``, the ``!cmd`` output waiting put ahead of it; ``draft`` is
        what the composer held (default: ``prompt``), put back when the turn is refused before
        anything is sent (``_keep``)."""
        if self.running:
            self.app.note(BUSY_NOW)
            return
        context, notes = self.shell_context, self.shell_notes
        if context:  # ``!cmd`` output goes to the model with this prompt, which shows it
            prompt = "\n\n".join([*context, prompt])
            self.shell_context, self.shell_notes = [], []
            self.app.transcript.show_notes(notes, shown=False)
        self.start(self._turn(prompt, prompt if draft is None else draft, context, notes))
        self._turn_worker = self.worker

    def drop_shell_context(self) -> list[str]:
        """Forget the ``!cmd`` output waiting (another session is open); returns it."""
        dropped, self.shell_context, self.shell_notes = self.shell_context, [], []
        return dropped

    def run_shell(self, command: str) -> None:
        """``!cmd``: run it (unasked: the person typed it; not under read-only); its output
        joins the context with the next prompt."""
        if not command:
            self.app.note("!cmd runs cmd in the workspace; its output goes with your next prompt.")
        elif self.running:
            self.app.note(BUSY_NOW)
        else:
            self.start(self._shell(command))

    async def _shell(self, command: str) -> None:
        app = self.app
        app.set_busy(f"$ {command}", cancels=True)
        so_far = OutputSoFar()
        run = asyncio.ensure_future(run_shell_command(app.controller, command, so_far))
        self._shell_run, self._shell_stopped = run, False
        try:
            output = await run
        except asyncio.CancelledError:
            if not self._shell_stopped:
                raise  # the app is closing: the tool killed what the command started
            output = stopped_output(app.controller, so_far)
        finally:
            self._shell_run = None
            app.set_busy(None)
        if output.code == "DENIED":
            app.note(output.text)
            return
        self.shell_context.append(context_block(masked_command(app.controller, command), output))
        self.shell_notes.append(
            app.transcript.add_note(
                f"$ {command}\n{output.text.rstrip()}\n(sent to the model with your next prompt)"
            )
        )

    def _keep(self, draft: str, context: list[str], notes: list[Block]) -> None:
        """A turn that ended without logging its prompt (refused before it was sent: too large
        for the window, a window with no room for one; failed or cancelled before its first
        step): its draft goes back in the composer, before anything typed since, and the
        ``!cmd`` output it would have carried waits for the next prompt again (its notes back
        on the screen)."""
        self.shell_context = [*context, *self.shell_context]
        self.shell_notes = [*notes, *self.shell_notes]
        self.app.transcript.show_notes(notes, shown=True)
        self.app.prompt_box.put_back(draft)  # its long pastes as placeholders again

    def _poll_waiting(self) -> None:
        """While a model call is silent, the status says for how long (after a second); a
        running tool card says how long it has run."""
        app = self.app
        app.running_cards.tick()
        if app.busy not in (WORKING, self._waiting):
            return  # cancelling…: that says more
        self._waiting = waiting_notice(
            app.controller.waiting_since, asyncio.get_running_loop().time()
        )
        busy = self._waiting or WORKING
        if busy != app.busy:
            app.set_busy(busy, cancels=True, turn=True)

    async def _turn(self, prompt: str, draft: str, context: list[str], notes: list[Block]) -> None:
        app = self.app
        app.set_busy(WORKING, cancels=True, turn=True)
        self.notifier.turn_started()
        app.live.prompt_sent(prompt, compacting=app.controller.progress.running)
        poll = app.set_interval(POLL_EVERY, self._poll_waiting)
        try:
            result = await app.controller.run_turn(prompt)  # its end is a logged note
            if result.reason != "completed":
                self.failed()
        except (PromptTooLarge, ConfigError) as exc:  # refused before anything was logged
            self.failed()
            app.note(f"error: {error_line(str(exc))}")
        except DshError as exc:
            self.failed()
            app.note(f"error: {error_line(str(exc))}")
        except Exception as exc:  # a bug must not take the session down with it
            self.failed()
            failure = f"internal error: {error_line(exc)}"  # one line, escaped, bounded
            # the record keeps the exception whole (exc_info), as the log's turn/end its text
            log.exception("the turn failed: %s", failure, extra={SHOWN_AS_ERROR: True})
            app.note(failure)  # shown here: /warnings lists it, no toast repeats it
        finally:
            poll.stop()
            self.notifier.turn_ended()
            self._waiting = None
            if app.live.turn_ended():  # its prompt never reached the log: nothing is lost
                self.failed()
                self._keep(draft, context, notes)
            app.reset_live()
            app.set_busy(None)
            app.measure_context()
