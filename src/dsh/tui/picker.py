"""The session picker: ``dsh --resume`` without an id, and ``/sessions`` in the UI.

One row per session, newest first: title, age (since its last event), size in turns, and
workspace. Enter opens the highlighted session, esc closes the picker without choosing.

On its own (``dsh --resume``) the picker is an app of its own that handles dsh's warnings as
the UI does (``dsh.tui.app_warnings``): a toast each, none written over the screen, and kept
for the UI's ``/warnings`` when it is given the UI's log.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from dsh.errors import printable_line
from dsh.store import EventStore
from dsh.transcript.listing import session_summaries
from dsh.transcript.titles import SessionSummary, trim_title
from dsh.tui.app_warnings import WarningLog, WarningsApp

TITLE_WIDTH = 44
WORKSPACE_WIDTH = 30


def age_text(then_ms: int, now_ms: int) -> str:
    """How long ago, coarsely: ``just now``, ``5 min``, ``3 h``, ``2 d``, ``6 wk``."""
    seconds = max(0, (now_ms - then_ms) // 1000)
    for unit, size in (("wk", 7 * 86400), ("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return "just now"


def _short_path(path: str, width: int = WORKSPACE_WIDTH) -> str:
    home = str(Path.home())
    if path == home or path.startswith(home + "/"):
        path = "~" + path[len(home) :]
    return path if len(path) <= width else "…" + path[-(width - 1) :]


def picker_row(summary: SessionSummary, now_ms: int, *, current: bool = False) -> Text:
    """One line of the picker (the columns line up in a monospace terminal)."""
    title = trim_title(summary.title, TITLE_WIDTH)
    turns = f"{summary.turns} turn{'' if summary.turns == 1 else 's'}"
    row = Text(no_wrap=True, overflow="ellipsis")
    row.append(f"{title:<{TITLE_WIDTH}}", style="bold" if current else "")
    row.append(f"  {age_text(summary.updated_at, now_ms):>11}", style="dim")
    row.append(f"  {turns:>9}", style="dim")
    row.append(f"  {_short_path(printable_line(summary.cwd))}", style="dim")
    if current:
        row.append("  (open)", style="italic")
    return row


def newest_first(summaries: Sequence[SessionSummary]) -> list[SessionSummary]:
    return sorted(summaries, key=lambda s: (s.updated_at, s.created_at, s.id), reverse=True)


class SessionPicker(ModalScreen[str | None]):
    """Choose a session; dismisses with its id, or None (esc)."""

    DEFAULT_CSS = """
    SessionPicker {
        align: center middle;
    }
    SessionPicker > Vertical {
        width: 96%;
        height: 80%;
        border: thick $accent;
        background: $surface;
        padding: 0 1;
    }
    SessionPicker #picker-title {
        height: 1;
        margin-bottom: 1;
    }
    SessionPicker OptionList {
        height: 1fr;
    }
    """

    BINDINGS = [Binding("escape", "dismiss_none", "Close")]  # noqa: RUF012

    def __init__(
        self,
        summaries: Sequence[SessionSummary],
        *,
        current: str | None = None,
        now_ms: int | None = None,
        heading: str = "Resume a session",
    ) -> None:
        super().__init__()
        self.summaries = newest_first(summaries)
        self.current = current
        self.now_ms = now_ms if now_ms is not None else time.time_ns() // 1_000_000
        self.heading = heading

    def compose(self) -> ComposeResult:
        with Vertical():
            count = len(self.summaries)
            sessions = f"{count} session{'' if count == 1 else 's'}"
            yield Static(f"{self.heading}: enter opens, esc closes ({sessions})", id="picker-title")
            options = [
                Option(picker_row(s, self.now_ms, current=s.id == self.current), id=s.id)
                for s in self.summaries
            ]
            yield OptionList(*options, id="sessions")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class PickerApp(WarningsApp[str | None]):
    """The picker on its own (``dsh --resume`` without an id); returns the chosen id."""

    TITLE = "dsh"

    def __init__(
        self,
        summaries: Sequence[SessionSummary],
        *,
        now_ms: int | None = None,
        warnings: WarningLog | None = None,
    ) -> None:
        super().__init__(warnings)
        self._summaries = summaries
        self._now_ms = now_ms

    def on_mount(self) -> None:
        picker = SessionPicker(self._summaries, now_ms=self._now_ms)
        self.push_screen(picker, callback=self.exit)


def pick_session(store: EventStore, warnings: WarningLog | None = None) -> str | None:
    """Show every stored session in the picker; the chosen id, or None if none was chosen.
    The warnings it shows are added to ``warnings`` (the UI's, which opens next)."""
    summaries = session_summaries(store)
    if not summaries:
        return None
    return PickerApp(summaries, warnings=warnings).run()
