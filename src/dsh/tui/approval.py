"""The approval prompt for tools under the ``ask`` policy: allow once, always, or deny."""

from __future__ import annotations

import json
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from dsh.tools.approval import ApprovalAnswer
from dsh.tui.wrap import sanitize

PREVIEW_LINES = 12


def describe_call(args: dict[str, Any]) -> str:
    """The arguments as people read them: a lone ``command`` as is, else indented JSON."""
    if set(args) <= {"command", "timeout"} and isinstance(args.get("command"), str):
        text = args["command"]
    else:
        text = json.dumps(args, indent=2, ensure_ascii=False)
    lines = sanitize(text).splitlines() or [""]
    if len(lines) > PREVIEW_LINES:
        lines = [*lines[:PREVIEW_LINES], f"… ({len(lines) - PREVIEW_LINES} more lines)"]
    return "\n".join(lines)


class ApprovalScreen(ModalScreen[ApprovalAnswer]):
    """Asks whether one tool call may run; dismisses with ``once``, ``always`` or ``deny``."""

    DEFAULT_CSS = """
    ApprovalScreen {
        align: center middle;
    }
    ApprovalScreen > Vertical {
        width: 80%;
        max-width: 100;
        height: auto;
        border: thick $warning;
        background: $surface;
        padding: 1 2;
    }
    ApprovalScreen #call {
        margin: 1 0;
        color: $text-muted;
    }
    ApprovalScreen Horizontal {
        height: auto;
    }
    ApprovalScreen Button {
        margin-right: 1;
    }
    """

    BINDINGS = [  # noqa: RUF012 (Textual's declaration style)
        Binding("o,y", "answer('once')", "Allow once"),
        Binding("a", "answer('always')", "Always"),
        Binding("d,n,escape", "answer('deny')", "Deny"),
    ]

    def __init__(self, tool: str, args: dict[str, Any]) -> None:
        super().__init__()
        self.tool = tool
        self.args = args

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Allow [b]{self.tool}[/b] to run?", id="question")
            yield Static(describe_call(self.args), id="call", markup=False)
            with Horizontal():
                yield Button("Allow once (o)", id="once", variant="primary")
                yield Button(f"Always allow {self.tool} this session (a)", id="always")
                yield Button("Deny (d)", id="deny", variant="error")

    def on_mount(self) -> None:
        self.query_one("#once", Button).focus()

    def action_answer(self, answer: ApprovalAnswer) -> None:
        self.dismiss(answer)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        answers: dict[str | None, ApprovalAnswer] = {
            "once": "once",
            "always": "always",
            "deny": "deny",
        }
        self.dismiss(answers.get(event.button.id, "deny"))
