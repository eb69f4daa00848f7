"""The plan panel: the session's todo list pinned above the composer while any item is not done
(``dsh.transcript.plan``: the list of the latest ``todo_write``, at most ``PLAN_ROWS`` rows —
a longer list as a window around the item in progress, the rest counted). It shows once the
session opens with such a list, follows each ``todo/write`` as it is logged, and goes when every
item is done or another session opens without one. On a short terminal it gives its rows back
first: it shows only while the transcript keeps at least ``PLAN_LEAVES`` rows beside it
(``dsh.tui.short_screen``). Each line is the model's text made safe to draw and cut to the
width with an ellipsis."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from dsh.events import Event, Todo, TodoWriteEvent
from dsh.surface import Session
from dsh.transcript.plan import PLAN_ROWS, current_plan, plan_lines, shows
from dsh.tui.short_screen import fit_to_height
from dsh.tui.wrap import sanitize


class PlanPanel(Static):
    DEFAULT_CSS = f"""
    PlanPanel {{
        height: auto;
        max-height: {PLAN_ROWS};
        padding: 0 1;
        color: $text-muted;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        display: none;
    }}
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.todos: tuple[Todo, ...] = ()
        self.lines: list[str] = []
        """What the panel says (none: nothing to show)."""

    @property
    def rows(self) -> int:
        """The rows it takes when shown (0: it has nothing to show)."""
        return len(self.lines)

    def show_plan(self, todos: Sequence[Todo]) -> None:
        """Pin ``todos`` (the session's newest list; empty: none)."""
        self.todos = tuple(todos)
        self.lines = [sanitize(line) for line in plan_lines(self.todos)] if shows(todos) else []
        self.update(Text("\n".join(self.lines)))
        self.refit()

    def show_session(self, session: Session | None) -> None:
        """Pin the list of ``session`` (None: a new session, no list)."""
        self.show_plan(current_plan(session.of_type(TodoWriteEvent)) if session else ())

    def logged(self, event: Event) -> None:
        """A logged event: a ``todo/write`` replaces the list."""
        if isinstance(event, TodoWriteEvent):
            self.show_plan(event.data.todos)

    def refit(self) -> None:
        """Show or hide it, and the other parts, for the terminal's height."""
        if self.is_mounted:
            fit_to_height(self.screen, self.app.size.height)
