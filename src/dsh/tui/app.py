"""The dsh terminal UI: transcript, status bar, prompt box, and the wiring between them.

The ``Controller`` owns the session and the agent; this app turns its events into widget
updates, runs turns and ``/compact`` as workers, and answers the approval policy with a modal.
What each slash command does is ``dsh.tui.app_commands``.

One piece of work runs at a time (a turn, a ``!cmd``, a ``/compact``). A draft sent meanwhile
is queued in the composer and sent when that work ends well; a cancel (esc, ctrl+c, esc in the
approval prompt) or a turn that did not complete puts it back in the box, unsent. The running
turn's prompt, and what the model streams, show after the logged blocks (``dsh.tui.live_tail``).

``!cmd`` output waits (``Work.shell_context``) for the next prompt of the session it ran in: opening
another session (``/resume``, ``/sessions``, ``/new``) drops it and says so, and a quit with some
waiting warns once first.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable, Coroutine
from typing import Any

from textual import events
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.driver import Driver
from textual.widgets import TextArea
from textual.worker import Worker

from dsh.agent.cancel import CANCELLED_BY_USER
from dsh.agent.exit_watchdog import arm_on_signal
from dsh.agent.prompt_commands import PromptCommandSource
from dsh.agent.stop_signals import STOP_SIGNALS, cancelled_by
from dsh.config import dsh_home
from dsh.errors import DshError, MissingApiKeyError, error_line
from dsh.events import (
    CompactionEndEvent,
    CompactionSummaryEvent,
    Event,
    TurnEndEvent,
    is_surface_event,
)
from dsh.llm.types import StreamEvent
from dsh.tools.approval import ApprovalAnswer
from dsh.transcript import TranscriptItem
from dsh.tui.app_commands import SlashCommands
from dsh.tui.app_warnings import WarningLog, WarningsApp
from dsh.tui.app_work import Work
from dsh.tui.approval import ApprovalScreen, ask, to_composer
from dsh.tui.commands import COMMANDS, Command, parse_command, prompt_text, waits
from dsh.tui.controller import Controller, TuiOptions, prompts_of
from dsh.tui.find import FindBar
from dsh.tui.hint_line import EscMeans, HintLine, composer_keys
from dsh.tui.live_tail import LiveTail
from dsh.tui.no_key import NoKeyScreen
from dsh.tui.opening import FIRST_PAGE_FROM_BYTES, STILL_OPENING, begin
from dsh.tui.plan_panel import PlanPanel
from dsh.tui.prompt import PromptBox
from dsh.tui.route_wait import ServerWait
from dsh.tui.running_cards import RunningCards
from dsh.tui.shell_command import shell_command
from dsh.tui.short_screen import fit_to_height
from dsh.tui.status_bar import StatusBar, trust_label
from dsh.tui.terminal_driver import TerminalGone, hangup_safe
from dsh.tui.transcript_view import TranscriptView
from dsh.tui.workspace_shown import workspace_shown

CONTEXT_EVERY = 0.25
QUIT_GRACE = 5.0
UNDO_NOT_STOPPED = "An /undo is not stopped half way; it ends on its own, in a moment."
"""Seconds a quit waits for the cancelled turn to close its log entries."""
QUIT_AGAIN_WITHIN = 2.0
"""Seconds in which a second ctrl+c, idle with an empty draft, leaves dsh (and a second quit
with ``!cmd`` output not sent yet)."""
UNSENT_ON_QUIT = (
    "The !cmd output is not sent yet (it goes with your next prompt); quit again to leave "
    "without it."
)
_CONTEXT_EVENTS = (CompactionEndEvent, TurnEndEvent)
"""Besides every surface event (a prompt and its attachment notes, a reply, a tool result, a
model-only replacement), what changes the next request's size: the status bar measures it again."""


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
        Binding("ctrl+t", "toggle_reasoning", "Reasoning", show=False),
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
        self.work = Work(self)
        self.server_wait = ServerWait(self)
        self.last_session_id: str | None = None
        """The session open when the app closed (``dsh`` then prints how to resume it)."""
        self._busy: str | None = None
        self._cancels = self._turn = self._context_pending = False
        self.first_page_from = FIRST_PAGE_FROM_BYTES  # logs this long paint their newest page first
        self._closed = False
        self._stopped_by: int | None = None
        self.clock: Callable[[], float] = time.monotonic
        """The clock a second ctrl+c or quit, and the approval prompt's wait, are timed by (a
        test sets its own)."""
        self._idle_interrupt_at: float | None = None
        self._unsent_warned_at: float | None = None
        self.first_prompt: str | None = None  # ``dsh PROMPT``: sent once the session is open

    def get_driver_class(self) -> type[Driver]:
        """Textual's terminal driver, made to quit when the terminal goes away (``hangup_safe``)."""
        return hangup_safe(super().get_driver_class())

    def compose(self) -> ComposeResult:
        view = TranscriptView(id="transcript")
        yield view
        yield PlanPanel(id="plan")
        yield StatusBar(id="status")
        yield FindBar(view, cursor_blink=self._cursor_blink, id="find")
        prompt = PromptBox(
            commands=lambda: (*COMMANDS, *self.prompt_commands.current().names),
            workspace=self.controller.options.workspace,
            send=self.submit,
            home=dsh_home(),
            id="prompt",
        )
        prompt.cursor_blink = self._cursor_blink
        yield prompt
        yield HintLine(id="hint")

    def on_mount(self) -> None:
        # a closed terminal or a ``kill`` quits like ctrl+q (the turn cancelled, its text kept),
        # then exits with 128 + the signal
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
            for signum in STOP_SIGNALS:
                asyncio.get_running_loop().add_signal_handler(signum, self._stop_signal, signum)
        self.transcript = self.query_one(TranscriptView)
        self.live = LiveTail(self.transcript)
        self.running_cards = RunningCards(self.transcript, lambda: self.clock())
        self.status_bar = self.query_one(StatusBar)
        self.prompt_box = self.query_one(PromptBox)
        self.screen.set_focus(self.prompt_box)  # now: keys typed while dsh started come here
        if self.first_prompt:
            self.work.queue(self.first_prompt, opening=True)
        workspace = self.controller.options.workspace
        self.status_bar.set(
            trust=trust_label(workspace), workspace=workspace_shown(self.controller.options)
        )
        self.server_wait.attach()
        begin(self)  # at once, or off the loop (``dsh.tui.opening``)

    def open_failed(self, exc: DshError) -> None:
        if isinstance(exc, MissingApiKeyError):
            self.push_screen(NoKeyScreen(exc))
        else:
            self.exit(return_code=1, message=f"dsh: error: {error_line(str(exc))}")

    def opened(self, items: list[TranscriptItem]) -> None:
        self.show_session(items)
        for text in self.controller.opening_notes():
            self.note(text)
        self.prompt_commands.current()  # a command file skipped is said now, not at first use
        self.ready = True
        self.work.send_queued()  # a draft sent while it opened

    def _stop_signal(self, signum: int) -> None:
        if self._stopped_by is None:
            self._stopped_by = signum
            arm_on_signal(signum)  # nobody is there to ask again if the clean stop hangs
            self.call_next(self.action_quit)

    def on_terminal_gone(self, _: TerminalGone) -> None:
        self._stop_signal(signal.SIGHUP)  # what a closed terminal sends, when it reaches us

    def on_unmount(self) -> None:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            for signum in STOP_SIGNALS:
                asyncio.get_running_loop().remove_signal_handler(signum)
        self._closed = True  # a session still opening closes once it is open
        session = self.controller.session
        self.last_session_id = session.id if session is not None else None
        self.controller.close()

    def show_session(self, items: list[TranscriptItem], *, seed: bool = True) -> None:
        """Show the open session: its transcript, the status bar with its context use as
        ``/context`` measures it, and (``seed``) its prompts as the composer's history."""
        self.transcript.load(items, self.controller.projector.details)
        self.query_one(PlanPanel).show_session(self.controller.session)
        if seed:
            self.prompt_box.seed(prompts_of(items))
        self.update_status()
        self.measure_context()
        self.call_after_refresh(self.controller.warm_route)  # once it is drawn, not before

    def switched(self, items: list[TranscriptItem], said: str, *, seed: bool = True) -> None:
        """Another session is open (``/resume``, ``/sessions``, ``/new``): show it, say
        ``said``, and drop the ``!cmd`` output the session left behind was to get (saying so)."""
        dropped = self.work.drop_shell_context()
        self.reset_live()
        self.show_session(items, seed=seed)
        self.note(said)
        if dropped:
            self.note(
                f"Not sent: the output of {len(dropped)} !cmd run(s) waiting for the next "
                "prompt of the session you left."
            )

    # ---- what the controller reports ------------------------------------------------------------

    def event_logged(self, event: Event, items: list[TranscriptItem]) -> None:
        view = self.transcript
        self.live.logged(event, compacting=self.controller.progress.running)
        self.query_one(PlanPanel).logged(event)
        if items:
            self.running_cards.added(view.add_items(items))
        if isinstance(event, CompactionSummaryEvent):
            view.refresh_markers()
        self.update_status(context=is_surface_event(event) or isinstance(event, _CONTEXT_EVENTS))

    def streamed(self, event: StreamEvent) -> None:
        self.live.streamed(event)

    async def approve(
        self, tool: str, args: dict[str, Any], protected: str | None
    ) -> ApprovalAnswer:
        screen = ApprovalScreen(
            tool,
            args,
            self.controller.options.workspace,
            clock=self.clock,
            typed_ahead=to_composer(self.prompt_box, self.submit),
            protected=protected,
        )
        self.running_cards.asking(tool, args)
        try:
            return await ask(self, screen, cancel_turn=self.work.cancel)
        finally:
            self.running_cards.answered()

    def reset_live(self) -> None:
        self.live.reset_stream()

    def update_status(self, *, context: bool = False) -> None:
        """Refresh the status bar; ``context`` asks for the context use to be measured again,
        which happens at most every ``CONTEXT_EVERY`` seconds and at every turn's end: a prompt
        with a large attachment or a large tool result shows while its request is at the model.
        ``Session.measure`` prices only the nodes after its anchor (each priced once)."""
        controller = self.controller
        self.status_bar.set(
            model=controller.model,
            approval=controller.approval if controller.approval != "ask" else None,
            context_window=controller.window,
            cache_ratio=controller.cache.ratio,
            compaction=controller.progress.text,
            busy=self._busy,
            cancels=self._cancels,
            queued=int(self.prompt_box.queued is not None),
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
        self.status_bar.measure(self.controller)

    def note(self, text: str) -> None:
        self.transcript.add_note(text)

    @property
    def busy(self) -> str | None:
        """What the status bar says runs (None: nothing)."""
        return self._busy

    def set_busy(self, busy: str | None, *, cancels: bool = False, turn: bool = False) -> None:
        """Say what runs (None: nothing); ``cancels``: a key cancels it (the bar names it);
        ``turn``: it is a turn (the keys hint names it so; other work is "it")."""
        self._busy, self._cancels, self._turn = busy, cancels, turn
        self.update_status()
        self.show_keys()

    def show_keys(self) -> None:
        """The hint line's keys as they are now (esc: clear, cancel, or take back), and the
        status bar's count of queued drafts."""
        self.status_bar.set(queued=int(self.prompt_box.queued is not None))
        esc: EscMeans = "clears"
        if self.prompt_box.queued is not None:
            esc = "unqueues"
        elif self.running or self._busy is not None:  # /undo: esc does nothing
            esc = ("cancels" if self._turn else "stops") if self._cancels else "waits"
        self.query_one(HintLine).set_keys(composer_keys(esc))

    # ---- input --------------------------------------------------------------------------------

    def submit(self, draft: str, *, queued: bool = False) -> None:
        """Send the composer's ``draft`` (or the ``queued`` one, when the work it waited for
        ended): a prompt, a ``!cmd``, a command. One that must wait for the running work is
        queued; an unknown command stays in the box, selected, so typing replaces it."""
        if not self.ready:  # the session is not open for turns yet: queued until it is
            if queued:  # taken from the queue to be sent: back in the box, not lost
                self.prompt_box.put_back(draft)
            elif draft.strip():
                self.work.queue(draft, opening=True)
                self.notify(STILL_OPENING)
            return
        text = draft.strip()
        shell = shell_command(text)
        command = parse_command(text)
        expanded = None
        if command is not None and command.name not in COMMANDS:
            expanded = self.prompt_commands.current().expand(command.name, command.arg)
            if expanded is None:
                self.commands.unknown(command.name, draft, queued=queued)
                return
        if text and self.running and waits(shell, command):
            self.work.queue(draft)
            return
        if not queued:
            self.prompt_box.value = ""
            self.query_one(HintLine).clear()
        if not text:
            return
        self.transcript.follow_end()  # what was sent and its answer show, as they come
        if shell is not None:
            self.prompt_box.remember(text)
            self.work.run_shell(shell)
        elif command is None:
            self.prompt_box.remember(draft.rstrip())
            self.work.send(prompt_text(draft), draft)
        elif expanded is not None:  # a prompt command: its text is the prompt
            self.prompt_box.remember(text)
            self.work.send(expanded, draft)
        else:
            self.prompt_box.remember(text)
            self.run_command(command)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.work.ended(event.worker)

    @property
    def running(self) -> bool:
        return self.work.running

    def start_work(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a turn, a ``!cmd``, a ``/compact`` or an ``/undo``: one at a time (see
        ``running``)."""
        self.work.start(work)

    @property
    def shell_context(self) -> list[str]:
        """``!cmd`` outputs waiting for the next prompt (``Work.shell_context``)."""
        return self.work.shell_context

    def run_command(self, command: Command) -> None:
        self.commands.run(command)

    # ---- keys ---------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Leave (a stop signal too); with ``!cmd`` output not sent yet, only when asked again
        within ``QUIT_AGAIN_WITHIN`` seconds of the warning."""
        if self._stopped_by is None and self.shell_context:
            warned, self._unsent_warned_at = self._unsent_warned_at, self.clock()
            if warned is None or self.clock() - warned > QUIT_AGAIN_WITHIN:
                self.notify(UNSENT_ON_QUIT, severity="warning", timeout=QUIT_AGAIN_WITHIN)
                return
        await self.leave()

    async def leave(self) -> None:
        """Leave now; a running turn is cancelled first so the log closes it (``turn/end``),
        and a running ``/undo`` let finish (its files and its answer must agree), each waited
        for at most ``QUIT_GRACE`` seconds."""
        worker = self.work.worker
        stopped_by = self._stopped_by
        reason = CANCELLED_BY_USER if stopped_by is None else cancelled_by(stopped_by)
        if worker is not None and not worker.is_finished and self.controller.cancel(reason):
            self.set_busy("cancelling…")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), timeout=QUIT_GRACE)
        elif worker is not None and not worker.is_finished and self.controller.undoing:
            with contextlib.suppress(Exception):  # not cancelled: its files and log must agree
                await asyncio.wait_for(worker.wait(), timeout=QUIT_GRACE)
        self.exit(return_code=0 if self._stopped_by is None else 128 + self._stopped_by)

    def on_resize(self, event: events.Resize) -> None:
        fit_to_height(self.screen_stack[0], event.size.height)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:  # the draft's rows
        fit_to_height(self.screen_stack[0], self.size.height)

    def on_prompt_box_hint(self, event: PromptBox.Hint) -> None:
        hint = self.query_one(HintLine)
        if event.text:
            hint.say(event.text)
        else:
            hint.clear()

    def on_transcript_view_typed(self, event: TranscriptView.Typed) -> None:
        """Typing (or a paste) with the transcript focused goes to the prompt, not nowhere."""
        self.prompt_box.focus()
        self.prompt_box.paste(event.text)

    def on_prompt_box_scroll(self, event: PromptBox.Scroll) -> None:
        self.action_scroll_transcript(event.where)

    def action_scroll_transcript(self, where: str) -> None:
        """PgUp / PgDn (and Home / End on an empty draft) scroll the transcript from the prompt;
        under an approval prompt, they scroll the call it shows instead."""
        if isinstance(self.screen, ApprovalScreen):
            raise SkipAction
        self.transcript.scroll_by_key(where)

    def action_cancel_turn(self) -> None:
        """esc: take a queued draft back into the box; else cancel the running turn; idle,
        clear the draft."""
        if self.prompt_box.unqueue():
            self.show_keys()
        elif not self.work.cancel() and not self.running:
            self.prompt_box.clear_draft()

    async def action_interrupt(self) -> None:
        """ctrl+c: cancel the running turn; idle, clear the draft; idle with an empty draft,
        say how to leave, and leave when pressed again within ``QUIT_AGAIN_WITHIN`` seconds."""
        first_at, self._idle_interrupt_at = self._idle_interrupt_at, None
        if self.work.cancel() or (not self.running and self.prompt_box.clear_draft()):
            return
        if self.running and self.controller.undoing:
            self.notify(UNDO_NOT_STOPPED)
        elif self.running:
            self.notify("Compaction cannot be cancelled; it ends on its own.")
        elif first_at is not None and self.clock() - first_at <= QUIT_AGAIN_WITHIN:
            await self.leave()
        else:
            self._idle_interrupt_at = self.clock()
            unsent = "The !cmd output is not sent yet. " if self.shell_context else ""
            self.notify(
                f"{unsent}Nothing is running. Press ctrl+c again to leave dsh (or ctrl+q, /quit).",
                timeout=QUIT_AGAIN_WITHIN,
            )

    def action_toggle_reasoning(self) -> None:
        self.transcript.set_show_reasoning(not self.transcript.show_reasoning)

    def action_toggle_card(self) -> None:
        self.transcript.toggle_current()

    def action_find(self) -> None:
        self.query_one(FindBar).open()
