"""The dsh terminal UI: transcript, status bar, prompt box, and the wiring between them.

The ``Controller`` owns the session and the agent; this app turns its events into widget
updates, runs turns and ``/compact`` as workers, and answers the approval policy with a modal.
What each slash command does is ``dsh.tui.app_commands``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.driver import Driver
from textual.widgets import Static, TextArea
from textual.worker import Worker

from dsh.agent.cancel import CANCELLED_BY_USER
from dsh.agent.prompt_commands import PromptCommandSource
from dsh.agent.stop_signals import STOP_SIGNALS, cancelled_by
from dsh.agent.waiting import POLL_EVERY, waiting_notice
from dsh.config import dsh_home
from dsh.errors import SHOWN_AS_ERROR, DshError, MissingApiKeyError, error_line, printable_line
from dsh.events import (
    AssistantMessageEvent,
    CompactionEndEvent,
    CompactionSummaryEvent,
    Event,
    TurnEndEvent,
    is_replacement_surface_event,
)
from dsh.llm.types import ReasoningDelta, StreamEvent, TextDelta, ToolCallDelta
from dsh.tools.approval import ApprovalAnswer
from dsh.transcript import TranscriptItem
from dsh.tui.app_commands import SlashCommands
from dsh.tui.app_warnings import WarningLog, WarningsApp
from dsh.tui.approval import ApprovalScreen
from dsh.tui.commands import (
    COMMANDS,
    KEPT_WHILE_RUNNING,
    Command,
    parse_command,
    prompt_text,
    waits,
)
from dsh.tui.controller import Controller, TuiOptions, prompts_of
from dsh.tui.find import FindBar
from dsh.tui.no_key import NoKeyScreen
from dsh.tui.opening import FIRST_PAGE_FROM_BYTES, STILL_OPENING, first_page, open_off_the_loop
from dsh.tui.prompt import KEYS_HINT, PromptBox
from dsh.tui.shell_command import context_block, run_shell_command, shell_command
from dsh.tui.short_screen import fit_to_height
from dsh.tui.status_bar import StatusBar, trust_label
from dsh.tui.terminal_driver import hangup_safe
from dsh.tui.transcript_view import TranscriptView

log = logging.getLogger("dsh.tui")

CONTEXT_EVERY = 0.25
WORKING = "working… (esc cancels)"
QUIT_GRACE = 5.0
"""Seconds a quit waits for the cancelled turn to close its log entries."""
QUIT_AGAIN_WITHIN = 2.0
"""Seconds in which a second ctrl+c, idle with an empty draft, leaves dsh."""
_CONTEXT_EVENTS = (AssistantMessageEvent, CompactionEndEvent, TurnEndEvent)


class DshApp(WarningsApp[None]):
    TITLE = "dsh"
    CSS = """
    Screen {
        layout: vertical;
    }
    #hint {
        height: 1;
        padding: 0 1;
        color: $text-muted;
    }
    """

    BINDINGS = [  # noqa: RUF012 (Textual's declaration style)
        Binding("ctrl+c", "interrupt", "Cancel turn", priority=True, show=False),
        Binding("escape", "cancel_turn", "Cancel turn", show=False),
        Binding("ctrl+r", "toggle_reasoning", "Reasoning", show=False),
        Binding("ctrl+o", "toggle_card", "Expand card", show=False),
        Binding("ctrl+f", "find", "Find", show=False, priority=True),
        Binding("pageup", "scroll_transcript('page_up')", "Scroll up", show=False, priority=True),
        Binding(
            "pagedown", "scroll_transcript('page_down')", "Scroll down", show=False, priority=True
        ),
    ]

    def __init__(self, options: TuiOptions, *, warnings: WarningLog | None = None) -> None:
        super().__init__(warnings)
        self.controller = Controller(options, self)
        self.commands = SlashCommands(self)
        self.prompt_commands = PromptCommandSource(
            dsh_home(), self.controller.options.workspace, COMMANDS
        )
        """Your and the project's prompt commands (``dsh.agent.prompt_commands``)."""
        self._cursor_blink = options.cursor_blink
        self.ready = False
        self.shell_context: list[str] = []
        """``!cmd`` outputs waiting for the next prompt."""
        self.last_session_id: str | None = None
        """The session open when the app closed (``dsh`` then prints how to resume it)."""
        self._busy: str | None = None
        self._waiting: str | None = None
        self._context_pending = False
        self._worker: Worker[None] | None = None
        self._live_text = ""
        self._live_reasoning = ""
        self._live_calls: dict[int, str] = {}
        self.first_page_from = FIRST_PAGE_FROM_BYTES  # logs this long paint their newest page first
        self._closed = False
        self._stopped_by: int | None = None
        self.clock: Callable[[], float] = time.monotonic
        """The clock a second ctrl+c is timed by (a test sets its own)."""
        self._idle_interrupt_at: float | None = None

    def get_driver_class(self) -> type[Driver]:
        """Textual's terminal driver, made to quit when the terminal goes away (``hangup_safe``)."""
        return hangup_safe(super().get_driver_class())

    def compose(self) -> ComposeResult:
        view = TranscriptView(id="transcript")
        yield view
        yield StatusBar(id="status")
        yield FindBar(view, cursor_blink=self._cursor_blink, id="find")
        prompt = PromptBox(
            commands=lambda: (*COMMANDS, *self.prompt_commands.current().names),
            workspace=self.controller.options.workspace,
            id="prompt",
        )
        prompt.cursor_blink = self._cursor_blink
        yield prompt
        yield Static(KEYS_HINT, id="hint", markup=False)

    def on_mount(self) -> None:
        # a closed terminal or a ``kill`` quits like ctrl+q (the turn cancelled, its text kept),
        # then exits with 128 + the signal
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
            for signum in STOP_SIGNALS:
                asyncio.get_running_loop().add_signal_handler(signum, self._stop_signal, signum)
        self.transcript = self.query_one(TranscriptView)
        self.status_bar = self.query_one(StatusBar)
        self.prompt_box = self.query_one(PromptBox)
        self.prompt_box.focus()
        self.status_bar.set(trust=trust_label(self.controller.options.workspace))
        resume = self.controller.options.resume
        page = first_page(self.controller.options.store, resume, from_bytes=self.first_page_from)
        try:
            items = self.controller.start(resume=page is None)
        except (MissingApiKeyError, DshError) as exc:
            self._open_failed(exc)
            return
        if page is None or resume is None:  # nothing to resume, or a log short enough to open
            self._opened(items)
            return
        self.transcript.load(page.items, page.details)  # the newest page now, the rest after
        self.update_status()
        self.call_after_refresh(lambda: self.run_worker(self._finish_open(resume), group="open"))

    async def _finish_open(self, session_id: str) -> None:
        try:
            items = await open_off_the_loop(self.controller, session_id, lambda: self._closed)
        except (MissingApiKeyError, DshError) as exc:
            return self._open_failed(exc)
        if items is not None:
            self._opened(items)

    def _open_failed(self, exc: DshError) -> None:
        if isinstance(exc, MissingApiKeyError):
            self.push_screen(NoKeyScreen(exc))
        else:
            self.exit(return_code=1, message=f"dsh: error: {error_line(str(exc))}")

    def _opened(self, items: list[TranscriptItem]) -> None:
        self.show_session(items)
        for text in self.controller.opening_notes():
            self.note(text)
        self.ready = True

    def _stop_signal(self, signum: int) -> None:
        if self._stopped_by is None:
            self._stopped_by = signum
            self.call_next(self.action_quit)

    def on_unmount(self) -> None:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            for signum in STOP_SIGNALS:
                asyncio.get_running_loop().remove_signal_handler(signum)
        self._closed = True  # a session still opening closes once it is open
        session = self.controller.session
        self.last_session_id = session.id if session is not None else None
        self.controller.close()

    def show_session(self, items: list[TranscriptItem]) -> None:
        self.transcript.load(items, self.controller.projector.details)
        self.prompt_box.seed(prompts_of(items))
        self.update_status()
        self.measure_context()

    # ---- what the controller reports ------------------------------------------------------------

    def event_logged(self, event: Event, items: list[TranscriptItem]) -> None:
        view = self.transcript
        if isinstance(event, AssistantMessageEvent):
            self.reset_live()
        if items:
            view.add_items(items)
        if isinstance(event, CompactionSummaryEvent):
            view.refresh_markers()
        self.update_status(
            context=isinstance(event, _CONTEXT_EVENTS) or is_replacement_surface_event(event)
        )

    def streamed(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            self._live_text += event.text
        elif isinstance(event, ReasoningDelta):
            self._live_reasoning += event.text
        elif isinstance(event, ToolCallDelta):
            if event.name or event.index not in self._live_calls:
                self._live_calls[event.index] = event.name or ""
        else:
            return
        calls = [self._live_calls[i] for i in sorted(self._live_calls)]
        self.transcript.set_live(self._live_text, self._live_reasoning, calls)

    async def approve(self, tool: str, args: dict[str, Any]) -> ApprovalAnswer:
        answer: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()

        def done(result: ApprovalAnswer | None) -> None:
            if not answer.done():
                answer.set_result(result or "deny")

        screen = ApprovalScreen(tool, args, self.controller.options.workspace)
        await self.push_screen(screen, callback=done)
        try:
            return await answer
        except asyncio.CancelledError:  # the turn was cancelled while the modal was up
            if self.screen is screen:
                self.pop_screen()
            raise

    def reset_live(self) -> None:
        self._live_text, self._live_reasoning, self._live_calls = "", "", {}
        self.transcript.clear_live()

    def update_status(self, *, context: bool = False) -> None:
        """Refresh the status bar; ``context`` asks for the context use to be measured again,
        which happens at most every ``CONTEXT_EVERY`` seconds (``Session.measure`` walks the
        whole surface) and at every turn's end."""
        controller = self.controller
        self.status_bar.set(
            model=controller.model,
            context_window=controller.window,
            cache_ratio=controller.cache.ratio,
            compaction=controller.progress.text,
            busy=self._busy,
        )
        if context and not self._context_pending:
            self._context_pending = True
            self.set_timer(CONTEXT_EVERY, self.measure_context)

    @property
    def status_settled(self) -> bool:
        """False while a re-measure of the context use is scheduled."""
        return not self._context_pending

    def measure_context(self) -> None:
        self._context_pending = False
        self.status_bar.set(context_tokens=self.controller.context_tokens())

    def note(self, text: str) -> None:
        self.transcript.add_note(text)

    def set_busy(self, busy: str | None) -> None:
        self._busy = busy
        self.update_status()

    # ---- input --------------------------------------------------------------------------------

    def on_prompt_box_submitted(self, event: PromptBox.Submitted) -> None:
        if not self.ready:  # the draft stays; the session is not open for turns yet
            self.notify(STILL_OPENING)
            return
        text = event.value.strip()
        shell = shell_command(text)
        command = parse_command(text)
        if text and self.running and waits(shell, command):
            self.note(KEPT_WHILE_RUNNING)  # the draft stays in the box, to send after
            return
        expanded = None
        if command is not None and command.name not in COMMANDS:
            expanded = self.prompt_commands.current().expand(command.name, command.arg)
            if expanded is None:  # the draft stays, to mend
                self.note(
                    f"Unknown command /{printable_line(command.name)}; /help lists the commands "
                    "(// sends /)."
                )
                return
        self.prompt_box.value = ""
        self.query_one("#hint", Static).update(KEYS_HINT)
        if not text:
            return
        self.transcript.follow_end()  # what was sent and its answer show, as they come
        if shell is not None:
            self.prompt_box.remember(text)
            self.run_shell(shell)
        elif command is None:
            self.prompt_box.remember(event.value.rstrip())
            self.send(prompt_text(event.value))
        elif expanded is not None:  # a prompt command: its text is the prompt
            self.prompt_box.remember(text)
            self.send(expanded)
        else:
            self.prompt_box.remember(text)
            self.run_command(command)

    @property
    def running(self) -> bool:
        return self._worker is not None and not self._worker.is_finished

    def start_work(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a turn, a ``!cmd`` or a ``/compact``: one at a time (see ``running``)."""
        self._worker = self.run_worker(work, group="turn", exit_on_error=False)

    def send(self, prompt: str) -> None:
        if self.running:
            self.note("Something is running: wait for it (esc cancels a turn).")
            return
        if self.shell_context:  # ``!cmd`` output goes to the model with this prompt
            prompt = "\n\n".join([*self.shell_context, prompt])
            self.shell_context = []
        self.start_work(self._turn(prompt))

    def run_shell(self, command: str) -> None:
        """``!cmd``: run it (asking first under the ``ask`` policy); its output joins the
        context with the next prompt."""
        if not command:
            self.note("!cmd runs cmd in the workspace; its output goes with your next prompt.")
        elif self.running:
            self.note("Something is running: wait for it (esc cancels a turn).")
        else:
            self.start_work(self._shell(command))

    async def _shell(self, command: str) -> None:
        self.set_busy(f"$ {command}")
        try:
            output = await run_shell_command(self.controller, command)
        finally:
            self.set_busy(None)
        if output.code == "DENIED":
            self.note(output.text)
            return
        self.shell_context.append(context_block(command, output))
        self.note(f"$ {command}\n{output.text.rstrip()}\n(sent to the model with your next prompt)")

    def _poll_waiting(self) -> None:
        """While a model call is silent, the status says for how long (after a second)."""
        if self._busy not in (WORKING, self._waiting):
            return  # cancelling…: that says more
        notice = waiting_notice(self.controller.waiting_since, asyncio.get_running_loop().time())
        self._waiting = f"{notice} (esc cancels)" if notice else None
        busy = self._waiting or WORKING
        if busy != self._busy:
            self.set_busy(busy)

    async def _turn(self, prompt: str) -> None:
        self.set_busy(WORKING)
        poll = self.set_interval(POLL_EVERY, self._poll_waiting)
        try:
            await self.controller.run_turn(prompt)  # how it ended is a logged note (turn/end)
        except DshError as exc:
            self.note(f"error: {error_line(str(exc))}")
        except Exception as exc:  # a bug must not take the session down with it
            failure = f"internal error: {error_line(exc)}"  # one line, escaped, bounded
            # the record keeps the exception whole (exc_info), as the log's turn/end its text
            log.exception("the turn failed: %s", failure, extra={SHOWN_AS_ERROR: True})
            self.note(failure)  # shown here: /warnings lists it, no toast repeats it
        finally:
            poll.stop()
            self._waiting = None
            self.reset_live()
            self.set_busy(None)
            self.measure_context()

    def run_command(self, command: Command) -> None:
        self.commands.run(command)

    # ---- keys ---------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Leave; a running turn is cancelled first so the log closes it (``turn/end``)."""
        worker = self._worker
        stopped_by = self._stopped_by
        reason = CANCELLED_BY_USER if stopped_by is None else cancelled_by(stopped_by)
        if worker is not None and not worker.is_finished and self.controller.cancel(reason):
            self.set_busy("cancelling…")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), timeout=QUIT_GRACE)
        self.exit(return_code=0 if self._stopped_by is None else 128 + self._stopped_by)

    def on_resize(self, event: events.Resize) -> None:
        fit_to_height(self.screen_stack[0], event.size.height)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:  # the draft's rows
        fit_to_height(self.screen_stack[0], self.size.height)

    def on_prompt_box_hint(self, event: PromptBox.Hint) -> None:
        self.query_one("#hint", Static).update(event.text or KEYS_HINT)

    def on_transcript_view_typed(self, event: TranscriptView.Typed) -> None:
        """Typing (or a paste) with the transcript focused goes to the prompt, not nowhere."""
        self.prompt_box.focus()
        self.prompt_box.insert(event.text)

    def on_prompt_box_scroll(self, event: PromptBox.Scroll) -> None:
        self.action_scroll_transcript(event.where)

    def action_scroll_transcript(self, where: str) -> None:
        """PgUp / PgDn (and Home / End on an empty draft) scroll the transcript from the prompt."""
        self.transcript.scroll_by_key(where)

    def action_cancel_turn(self) -> None:
        if self.controller.cancel():
            self.set_busy("cancelling…")
        elif not self.running:
            self.prompt_box.clear_draft()

    async def action_interrupt(self) -> None:
        """ctrl+c: cancel the running turn; idle, clear the draft; idle with an empty draft,
        say how to leave, and leave when pressed again within ``QUIT_AGAIN_WITHIN`` seconds."""
        first_at, self._idle_interrupt_at = self._idle_interrupt_at, None
        if self.controller.cancel():
            self.set_busy("cancelling…")
        elif not self.running and self.prompt_box.clear_draft():
            return
        elif self.running:
            self.notify("Compaction cannot be cancelled; it ends on its own.")
        elif first_at is not None and self.clock() - first_at <= QUIT_AGAIN_WITHIN:
            await self.action_quit()
        else:
            self._idle_interrupt_at = self.clock()
            self.notify(
                "Nothing is running. Press ctrl+c again to leave dsh (or ctrl+q, /quit).",
                timeout=QUIT_AGAIN_WITHIN,
            )

    def action_toggle_reasoning(self) -> None:
        view = self.transcript
        view.set_show_reasoning(not view.show_reasoning)

    def action_toggle_card(self) -> None:
        self.transcript.toggle_current()

    def action_find(self) -> None:
        self.query_one(FindBar).open()
