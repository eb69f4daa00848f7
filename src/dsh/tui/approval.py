"""The approval prompt for tools under the ``ask`` policy: allow once, always, deny (this call),
or stop (deny it and cancel the turn).

A write to a protected path (``.dsh/``, ``.git/``, git hooks: :mod:`dsh.tools.protected`) is asked
every time: its prompt says why under the question and offers no "always" (no button, and ``a``
answers nothing).

It opens while people may still be typing (a prompt sent, the next one begun): a key meant for
the composer must not answer it. So it takes no answer until no key has come for
``QUIET_SECONDS`` since it opened; until then its buttons are disabled, a line says keys go to
the draft, and what is typed goes on to the composer (``typed_ahead``): characters and pastes
into the draft, enter sends it as the composer would (while a turn runs: queued). Esc is the one
key it takes at once: it denies the call and cancels the turn, which is what an esc typed ahead
meant too. The time is read from an injectable clock.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from dsh.tools.approval import ApprovalAnswer, always_label
from dsh.tools.planned_change import PlannedChange, planned_change
from dsh.tui.diffs import line_style, logged_diff
from dsh.tui.wrap import sanitize

PREVIEW_LINES = 12
DIFF_PREVIEW_LINES = 18
FRAME_ROWS = 12
"""Rows of the prompt besides the preview: border, padding, question, margins, buttons, keys."""
NARROW_COLUMNS = 72
"""Below this width the three buttons do not fit side by side: they stack, full width."""
STACKED_ROWS = 7
"""The rows stacking adds (two more buttons of three rows, the keys line wrapped once)."""
PROTECTED_ROWS = 3
"""The rows a protected write's reason takes (two wrapped lines and a margin)."""
COMMAND = Style(bold=True)
QUIET_SECONDS = 0.5
"""The prompt answers keys only once none has come for this long since it opened."""
QUIET_POLL = 0.1
"""How often a waiting prompt checks whether the typing has stopped (to wake its buttons)."""
KEYS_WAITING = "Waiting for you to stop typing: keys go to your draft."
KEYS_READY = "d or n: deny this call · esc: deny and cancel the turn"
WILL_FAIL = "Will fail: "
"""How the prompt begins a file change that cannot happen (the tool's error follows)."""
FAILS = Style(color="yellow", bold=True)
FAILS_WHY = Style(color="yellow")

TypedAhead = Callable[[events.Key | events.Paste], None]
"""Where a key or a paste goes that the prompt did not take (the composer)."""


class Composer(Protocol):
    """What typing ahead reaches: the draft (``dsh.tui.prompt.PromptBox``)."""

    @property
    def text(self) -> str: ...

    def insert(self, text: str) -> object: ...


def to_composer(box: Composer, send: Callable[[str], None]) -> TypedAhead:
    """What the prompt did not take while it waited, as the composer would have had it:
    characters and pastes join the draft, enter sends it (``send``: queued while work runs)."""

    def typed(event: events.Key | events.Paste) -> None:
        if isinstance(event, events.Paste):
            box.insert(event.text)
        elif event.key == "enter":
            send(box.text)
        elif event.is_printable and event.character is not None:
            box.insert(event.character)

    return typed


def _capped(lines: list[Text], limit: int) -> Text:
    if len(lines) > limit:
        lines = [*lines[:limit], Text(f"… ({len(lines) - limit} more lines)", style="dim")]
    return Text("\n").join(lines)


def describe_call(tool: str, args: dict[str, Any], workspace: Path | None = None) -> Text:
    """The call as people review it: a file edit as a coloured diff of the file (or, when it
    would fail, why, over its arguments: no diff that will not happen), a lone ``command`` as
    a shell line (``$ …``), anything else as indented JSON."""
    change = planned_change(tool, args, workspace)
    if change is not None:
        return _describe_change(change, args)
    if set(args) <= {"command", "timeout"} and isinstance(args.get("command"), str):
        lines = sanitize(args["command"]).splitlines() or [""]
        rows = [
            Text.assemble(("$ " if i == 0 else "  ", "dim"), (line, COMMAND))
            for i, line in enumerate(lines)
        ]
        return _capped(rows, PREVIEW_LINES)
    return _arguments(args)


def _arguments(args: dict[str, Any]) -> Text:
    text = json.dumps(args, indent=2, ensure_ascii=False)
    return _capped([Text(line) for line in sanitize(text).splitlines() or [""]], PREVIEW_LINES)


def _describe_change(change: PlannedChange, args: dict[str, Any]) -> Text:
    """A file change: ``Will fail: …`` and the arguments, or the diff under its note."""
    if change.fails is not None:
        why = Text.assemble((WILL_FAIL, FAILS), (sanitize(change.fails), FAILS_WHY))
        return Text("\n").join([why, Text("The call's arguments:", style="dim"), _arguments(args)])
    head = [Text(sanitize(change.note), style="dim italic")] if change.note else []
    if change.lines is None:  # too large to diff either way
        return Text("\n").join([*head, _arguments(args)])
    diff = logged_diff(change.path, change.lines)
    rows = [
        Text(line, style=line_style(line, header=i < diff.headers) or "")
        for i, line in enumerate(diff.lines)
    ]
    body = _capped(rows or [Text("(no change)", style="dim")], DIFF_PREVIEW_LINES)
    return Text("\n").join([*head, body])


class ApprovalScreen(ModalScreen[ApprovalAnswer]):
    """Asks whether one tool call may run; dismisses with ``once``, ``always`` or ``deny``
    (``cancels_turn`` then says whether esc asked for the turn to be cancelled too)."""

    DEFAULT_CSS = """
    ApprovalScreen {
        align: center middle;
    }
    ApprovalScreen > Vertical {
        width: 80%;
        min-width: 66;
        max-width: 100;
        height: auto;
        border: thick $warning;
        background: $surface;
        padding: 1 2;
    }
    ApprovalScreen #preview {
        height: auto;
        margin: 1 0;
    }
    ApprovalScreen Horizontal {
        height: auto;
    }
    ApprovalScreen #protected {
        height: auto;
        margin-top: 1;
        color: $text-warning;
    }
    ApprovalScreen #keys {
        height: auto;
        margin-top: 1;
        color: $text-muted;
    }
    ApprovalScreen.waiting #keys {
        color: $text-warning;
        text-style: bold;
    }
    ApprovalScreen Button {
        margin-right: 1;
    }
    ApprovalScreen.narrow > Vertical {
        width: 100%;
        min-width: 0;
        padding: 0 1;
    }
    ApprovalScreen.narrow Horizontal {
        layout: vertical;
    }
    ApprovalScreen.narrow Button {
        width: 100%;
        margin-right: 0;
    }
    """

    BINDINGS = [  # noqa: RUF012 (Textual's declaration style)
        Binding("o,y", "answer('once')", "Allow once"),
        Binding("a", "answer('always')", "Always"),
        Binding("d,n", "answer('deny')", "Deny"),
        Binding("escape", "stop", "Deny and cancel the turn"),
    ]

    def __init__(
        self,
        tool: str,
        args: dict[str, Any],
        workspace: Path | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        typed_ahead: TypedAhead | None = None,
        protected: str | None = None,
    ) -> None:
        super().__init__(classes="waiting")
        self.tool = tool
        self.args = args
        self.workspace = workspace
        self.protected = protected
        """Why this call is asked every time (a protected write): no "always" is offered."""
        self.cancels_turn = False
        """True once esc answered: the call is denied and the turn is to be cancelled."""
        self._clock = clock
        self._typed_ahead = typed_ahead
        self._quiet_since = clock()
        self._accepting = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Allow [b]{self.tool}[/b] to run?", id="question")
            if self.protected is not None:
                shown = f"Asked every time: {sanitize(self.protected)}."
                yield Static(shown, id="protected", markup=False)
            with VerticalScroll(id="preview"):  # scrolls when the screen is too short
                yield Static(describe_call(self.tool, self.args, self.workspace), id="call")
            with Horizontal():
                yield Button("Allow once (o)", id="once", variant="primary", disabled=True)
                if self.protected is None:
                    label = f"{always_label(self.tool)} (a)"
                    yield Button(label, id="always", disabled=True)
                yield Button("Deny (d)", id="deny", variant="error", disabled=True)
            yield Static(KEYS_WAITING, id="keys", markup=False)

    def on_mount(self) -> None:
        self._poll = self.set_interval(QUIET_POLL, self.accepting)
        self.on_resize()

    @property
    def waiting(self) -> bool:
        """True while the prompt takes no answer (its buttons disabled)."""
        return not self._accepting

    def accepting(self) -> bool:
        """Whether keys answer now: once no key has come for ``QUIET_SECONDS`` since the
        prompt opened, the buttons wake (``#once`` focused) and stay awake."""
        if not self._accepting and self._clock() - self._quiet_since >= QUIET_SECONDS:
            self._accepting = True
            self._poll.stop()
            self.remove_class("waiting")
            for button in self.query(Button):
                button.disabled = False
            self.query_one("#once", Button).focus()
            self.query_one("#keys", Static).update(KEYS_READY)
        return self._accepting

    def on_key(self, event: events.Key) -> None:
        """A key while the prompt waits answers nothing (esc aside): it goes on to the
        composer, and the wait starts again."""
        if event.key == "escape" or self.accepting():
            return
        event.stop()
        event.prevent_default()
        self._quiet_since = self._clock()
        if self._typed_ahead is not None:
            self._typed_ahead(event)

    def on_paste(self, event: events.Paste) -> None:
        """A paste is never an answer: it goes to the composer."""
        event.stop()
        if self._typed_ahead is not None:
            self._typed_ahead(event)

    def on_resize(self) -> None:
        """Keep the question and the buttons on screen: the buttons stack on a narrow
        screen, and the preview gets the rows left."""
        narrow = self.app.size.width < NARROW_COLUMNS
        self.set_class(narrow, "narrow")
        extra = (STACKED_ROWS if narrow else 0) + (PROTECTED_ROWS if self.protected else 0)
        room = max(1, self.app.size.height - FRAME_ROWS - extra)
        self.query_one("#preview", VerticalScroll).styles.max_height = room

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A protected write's prompt has no "always": ``a`` is not bound there."""
        return not (action == "answer" and parameters == ("always",) and self.protected)

    def action_answer(self, answer: ApprovalAnswer) -> None:
        if answer == "always" and self.protected is not None:
            return
        if self.accepting():
            self.dismiss(answer)

    def action_stop(self) -> None:
        """Esc: deny this call and have the turn cancelled (taken at once, waiting or not)."""
        self.cancels_turn = True
        self.dismiss("deny")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        answers: dict[str | None, ApprovalAnswer] = {
            "once": "once",
            "always": "always",
            "deny": "deny",
        }
        self.dismiss(answers.get(event.button.id, "deny"))


async def ask(
    app: App[Any], screen: ApprovalScreen, *, cancel_turn: Callable[[], object]
) -> ApprovalAnswer:
    """Put ``screen`` up and wait for its answer (``deny`` when it is dismissed without one);
    esc, its answer that denies the call and cancels the turn, calls ``cancel_turn``. A turn
    cancelled while it is up takes it down."""
    answer: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()

    def done(result: ApprovalAnswer | None) -> None:
        if not answer.done():
            answer.set_result(result or "deny")
        if screen.cancels_turn:
            cancel_turn()

    await app.push_screen(screen, callback=done)
    try:
        return await answer
    except asyncio.CancelledError:  # the turn was cancelled while the modal was up
        if app.screen is screen:
            app.pop_screen()
        raise
