"""The approval prompt for tools under the ``ask`` policy: allow once, always, or deny."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from dsh.tools.approval import ApprovalAnswer
from dsh.tui.diffs import call_diff, line_style
from dsh.tui.wrap import sanitize

PREVIEW_LINES = 12
DIFF_PREVIEW_LINES = 18
FRAME_ROWS = 11
"""Rows of the prompt besides the preview: border, padding, question, margins, buttons."""
NARROW_COLUMNS = 72
"""Below this width the three buttons do not fit side by side: they stack, full width."""
STACKED_ROWS = 6
"""The rows stacking adds (two more buttons of three rows)."""
COMMAND = Style(bold=True)


def _capped(lines: list[Text], limit: int) -> Text:
    if len(lines) > limit:
        lines = [*lines[:limit], Text(f"… ({len(lines) - limit} more lines)", style="dim")]
    return Text("\n").join(lines)


def describe_call(tool: str, args: dict[str, Any], workspace: Path | None = None) -> Text:
    """The call as people review it: a file edit as a coloured diff of the file, a lone
    ``command`` as a shell line (``$ …``), anything else as indented JSON."""
    diff = call_diff(tool, args, workspace)
    if diff is not None:
        rows = [
            Text(line, style=line_style(line, header=i < diff.headers) or "")
            for i, line in enumerate(diff.lines)
        ]
        return _capped(rows or [Text("(no change)", style="dim")], DIFF_PREVIEW_LINES)
    if set(args) <= {"command", "timeout"} and isinstance(args.get("command"), str):
        lines = sanitize(args["command"]).splitlines() or [""]
        rows = [
            Text.assemble(("$ " if i == 0 else "  ", "dim"), (line, COMMAND))
            for i, line in enumerate(lines)
        ]
        return _capped(rows, PREVIEW_LINES)
    text = json.dumps(args, indent=2, ensure_ascii=False)
    return _capped([Text(line) for line in sanitize(text).splitlines() or [""]], PREVIEW_LINES)


class ApprovalScreen(ModalScreen[ApprovalAnswer]):
    """Asks whether one tool call may run; dismisses with ``once``, ``always`` or ``deny``."""

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
        Binding("d,n,escape", "answer('deny')", "Deny"),
    ]

    def __init__(self, tool: str, args: dict[str, Any], workspace: Path | None = None) -> None:
        super().__init__()
        self.tool = tool
        self.args = args
        self.workspace = workspace

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Allow [b]{self.tool}[/b] to run?", id="question")
            with VerticalScroll(id="preview"):  # scrolls when the screen is too short
                yield Static(describe_call(self.tool, self.args, self.workspace), id="call")
            with Horizontal():
                yield Button("Allow once (o)", id="once", variant="primary")
                yield Button("Always, this session (a)", id="always")
                yield Button("Deny (d)", id="deny", variant="error")

    def on_mount(self) -> None:
        self.query_one("#once", Button).focus()
        self.on_resize()

    def on_resize(self) -> None:
        """Keep the question and the buttons on screen: the buttons stack on a narrow
        screen, and the preview gets the rows left."""
        narrow = self.app.size.width < NARROW_COLUMNS
        self.set_class(narrow, "narrow")
        room = max(1, self.app.size.height - FRAME_ROWS - (STACKED_ROWS if narrow else 0))
        self.query_one("#preview", VerticalScroll).styles.max_height = room

    def action_answer(self, answer: ApprovalAnswer) -> None:
        self.dismiss(answer)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        answers: dict[str | None, ApprovalAnswer] = {
            "once": "once",
            "always": "always",
            "deny": "deny",
        }
        self.dismiss(answers.get(event.button.id, "deny"))
