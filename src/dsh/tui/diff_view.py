"""``/diff`` in the terminal UI: the workspace's changes since its last commit
(``dsh.agent.workspace_diff``), coloured as the edit cards are, in a screen of their own that
scrolls and closes with esc or q. Git runs in a thread, so the UI keeps drawing while it works;
what stops it (no git, not a repository) is one note in the transcript.

A diff longer than ``SHOWN_LINES`` shows that many lines and says how many more there are
(``dsh.agent.workspace_diff.within_lines``, as ``dsh web``'s ``/diff`` cuts it)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from dsh.agent.workspace_diff import (
    MAX_DIFF_BYTES,
    NO_CHANGES,
    SHOWN_LINES,
    UNTRACKED_SHOWN,
    WorkspaceDiff,
    WorkspaceDiffError,
    within_lines,
    workspace_diff,
)
from dsh.errors import printable_line
from dsh.tui.diffs import line_style
from dsh.tui.wrap import sanitize

if TYPE_CHECKING:
    from dsh.tui.app import DshApp

__all__ = ["NO_CHANGES", "SHOWN_LINES", "DiffScreen", "diff_text", "show_workspace_diff"]


def diff_text(diff: WorkspaceDiff, *, shown_lines: int = SHOWN_LINES) -> Text:
    """The changes as coloured text: each file's diff under a bold path line, then the
    untracked files; at most ``shown_lines`` diff lines."""
    text = Text()
    files, hidden = within_lines(diff, shown_lines)
    for change in files:
        text.append(f"{sanitize(change.path)}\n", style="bold")
        headers = next((i for i, row in enumerate(change.lines) if row.startswith("@@")), 0)
        for number, line in enumerate(change.lines):
            shown = sanitize(line[:1]) + sanitize(line[1:])
            text.append(shown + "\n", style=line_style(line, header=number < headers) or "")
        text.append("\n")
    if hidden:
        text.append(f"… {hidden} more lines (git diff in a shell shows them all)\n\n", style="dim")
    if diff.truncated:
        mib = MAX_DIFF_BYTES // (1024 * 1024)
        text.append(f"(the diff is longer than {mib} MiB: the rest is left out)\n\n", style="dim")
    if diff.untracked:
        text.append("Untracked files\n", style="bold")
        for name in diff.untracked[:UNTRACKED_SHOWN]:
            text.append(f"  {sanitize(name)}\n", style="green")
        more = len(diff.untracked) - UNTRACKED_SHOWN
        if more > 0:
            text.append(f"  … and {more} more\n", style="dim")
    return text


class DiffScreen(ModalScreen[None]):
    """The changes, scrollable; esc or q closes it."""

    DEFAULT_CSS = """
    DiffScreen { align: center middle; }
    DiffScreen > VerticalScroll {
        width: 100%; height: 100%;
        border: round $border; background: $surface; padding: 0 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "close", "close")]

    def __init__(self, title: str, body: Text) -> None:
        super().__init__()
        self._title, self._body = title, body

    def compose(self) -> ComposeResult:
        scroll = VerticalScroll(Static(self._body, id="diff-body"))
        scroll.border_title = self._title
        scroll.border_subtitle = "esc or q closes"
        yield scroll

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    def action_close(self) -> None:
        self.dismiss(None)


async def show_workspace_diff(app: DshApp, workspace: Path) -> None:
    """Read the workspace's changes in a thread, then show them (or say why not)."""
    try:
        diff = await asyncio.to_thread(workspace_diff, workspace)
    except WorkspaceDiffError as exc:
        app.note(printable_line(f"/diff: {exc}"))
        return
    if diff.empty:
        app.note(NO_CHANGES)
        return
    count = f"{len(diff.files)} changed, {len(diff.untracked)} untracked"
    await app.push_screen(DiffScreen(f"/diff · {count}", diff_text(diff)))
