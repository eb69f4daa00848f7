"""The approval prompt for tools under the ``ask`` policy: allow once, always, deny (this call),
deny with a reason, or stop (deny it and cancel the turn).

``e`` opens a one-line input under the buttons (``dsh.tui.deny_reason``): enter denies the call
and the model reads what was typed in its result (an empty line: a plain deny); esc there goes
back to the choice, denying nothing, the text kept for another ``e``.

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

It shows the whole call (``dsh.tui.approval_preview``): a call taller than the room the screen
leaves scrolls in its box (up, down, pgup, pgdn, home, end, the mouse wheel; none of them an
answer), a line under it saying how many lines are out of sight; runs of blank lines (and
long runs of spaces in a line) show as one marker, so padding hides nothing below it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from dsh.tools.approval import (
    REASON_LIMIT,
    ApprovalAnswer,
    DenyWithReason,
    always_label,
    one_line_reason,
)
from dsh.tui.approval_preview import SCROLLS, Preview, describe_call, more_hint
from dsh.tui.deny_reason import ReasonInput
from dsh.tui.wrap import sanitize

FRAME_ROWS = 12
"""Rows of the prompt besides the preview: border, padding, question, margins, buttons, keys."""
NARROW_COLUMNS = 72
"""Below this width the three buttons do not fit side by side: they stack, full width."""
STACKED_ROWS = 7
"""The rows stacking adds (two more buttons of three rows, the keys line wrapped once)."""
PROTECTED_ROWS = 3
"""The rows a protected write's reason takes (two wrapped lines and a margin)."""
HINT_ROWS = 1
"""The row kept for the line under a preview taller than its box (two on a narrow screen)."""
REASON_ROWS = 4
"""The rows the reason's input takes while it is open (its box of three and a margin)."""
QUIET_SECONDS = 0.5
"""The prompt answers keys only once none has come for this long since it opened."""
QUIET_POLL = 0.1
"""How often a waiting prompt checks whether the typing has stopped (to wake its buttons)."""
KEYS_WAITING = "Waiting for you to stop typing: keys go to your draft."
KEYS_READY = "d or n: deny · e: deny with a reason · esc: cancel the turn"
KEYS_REASON = "enter: deny, the model reads this · esc: back to the choice"
CUT_NOTE = f"The reason holds at most {REASON_LIMIT:,} characters: the paste was cut."

TypedAhead = Callable[[events.Key | events.Paste], None]
"""Where a key or a paste goes that the prompt did not take (the composer)."""


class Composer(Protocol):
    """What typing ahead reaches: the draft (``dsh.tui.prompt.PromptBox``)."""

    @property
    def value(self) -> str: ...

    def insert(self, text: str) -> object: ...

    def paste(self, text: str) -> None: ...


def to_composer(box: Composer, send: Callable[[str], None]) -> TypedAhead:
    """What the prompt did not take while it waited, as the composer would have had it:
    characters and pastes join the draft, enter sends it (``send``: queued while work runs)."""

    def typed(event: events.Key | events.Paste) -> None:
        if isinstance(event, events.Paste):
            box.paste(event.text)
        elif event.key == "enter":
            send(box.value)
        elif event.is_printable and event.character is not None:
            box.insert(event.character)

    return typed


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
    ApprovalScreen #more {
        display: none;
        height: auto;
        margin-bottom: 1;
        color: $text-warning;
    }
    ApprovalScreen.overflows #preview {
        margin-bottom: 0;
    }
    ApprovalScreen.overflows #more {
        display: block;
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
    ApprovalScreen #reason {
        display: none;
        margin-top: 1;
    }
    ApprovalScreen.reasoning #reason {
        display: block;
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
        Binding("e", "deny_with_reason", "Deny with a reason"),
        Binding("escape", "stop", "Deny and cancel the turn"),
        *(Binding(key, f"scroll_preview('{key}')", "Scroll", show=False) for key in SCROLLS),
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
            with Preview(self.show_more, id="preview"):  # scrolls when the screen is too short
                yield Static(describe_call(self.tool, self.args, self.workspace), id="call")
            yield Static("", id="more", markup=False)
            with Horizontal():
                yield Button("Allow once (o)", id="once", variant="primary", disabled=True)
                if self.protected is None:
                    label = f"{always_label(self.tool)} (a)"
                    yield Button(label, id="always", disabled=True)
                yield Button("Deny (d)", id="deny", variant="error", disabled=True)
            yield ReasonInput(id="reason")
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
        composer (a scroll key scrolls the preview), and the wait starts again."""
        if event.key == "escape" or self.accepting():
            return
        event.stop()
        event.prevent_default()
        self._quiet_since = self._clock()
        if event.key in SCROLLS:
            self.action_scroll_preview(event.key)
        elif self._typed_ahead is not None:
            self._typed_ahead(event)

    def action_scroll_preview(self, key: str) -> None:
        """Up, down, pgup, pgdn, home, end: scroll the call (the mouse wheel does too)."""
        self.query_one("#preview", Preview).scroll_by_key(key)

    def show_more(self) -> None:
        """Under a preview taller than its box, say how many of its lines are out of sight
        and which keys bring them in; nothing under one that shows all."""
        for preview in self.query("#preview").results(Preview):  # none once the prompt closed
            self._show_more(*preview.hidden_rows())

    def _show_more(self, above: int, below: int) -> None:
        hint = more_hint(above, below)
        if hint:
            self.query_one("#more", Static).update(hint)
        self.set_class(bool(hint), "overflows")

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
        extra += HINT_ROWS * (2 if narrow else 1)
        extra += REASON_ROWS if self.has_class("reasoning") else 0
        room = max(1, self.app.size.height - FRAME_ROWS - extra)
        self.query_one("#preview", Preview).styles.max_height = room

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A protected write's prompt has no "always": ``a`` is not bound there."""
        return not (action == "answer" and parameters == ("always",) and self.protected)

    def action_answer(self, answer: ApprovalAnswer) -> None:
        if answer == "always" and self.protected is not None:
            return
        if self.accepting():
            self.dismiss(answer)

    def action_stop(self) -> None:
        """Esc: deny this call and have the turn cancelled (taken at once, waiting or not);
        in the reason's input, back to the choice."""
        if self.has_class("reasoning"):
            self.remove_class("reasoning")
            self.on_resize()
            self.query_one("#once", Button).focus()
            self.query_one("#keys", Static).update(KEYS_READY)
            return
        self.cancels_turn = True
        self.dismiss("deny")

    def action_deny_with_reason(self) -> None:
        """``e``: open the reason's input (once the prompt takes answers)."""
        if self.accepting():
            self.add_class("reasoning")
            self.on_resize()
            self.query_one("#reason", ReasonInput).focus()
            self.query_one("#keys", Static).update(KEYS_REASON)

    def on_input_changed(self, event: Input.Changed) -> None:
        """Say so when a paste was cut to fit the reason's limit."""
        if isinstance(event.input, ReasonInput) and event.input.cut:
            self.query_one("#keys", Static).update(f"{CUT_NOTE} {KEYS_REASON}")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the reason's input: deny, with the reason (none typed: a plain deny)."""
        event.stop()
        reason = one_line_reason(event.value)
        self.dismiss(DenyWithReason(reason) if reason else "deny")

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
