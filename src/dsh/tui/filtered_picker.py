"""A modal list to choose one row from, filtered by typing: each word typed must be in the row's
text (case aside), backspace widens the rows again, enter chooses (the screen dismisses with the
row's key), esc closes with None. Its title (what enter does, that esc closes) wraps to the
width, up to four rows. ``/model``'s picker (``dsh.tui.model_picker``) and
``/rewind``'s (``dsh.tui.rewind``) are ones."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from dsh.errors import printable_line
from dsh.tui.picker import edited_filter


class FilteredPicker(ModalScreen[str | None]):
    """Choose one of ``rows`` (key, text), shown in their order under ``title``; ``start``: the
    key of the row highlighted first (else the first row)."""

    DEFAULT_CSS = """
    FilteredPicker {
        align: center middle;
    }
    FilteredPicker > Vertical {
        width: 80%;
        height: 80%;
        border: thick $accent;
        background: $surface;
        padding: 0 1;
    }
    FilteredPicker #picker-title {
        height: auto;
        max-height: 4;
    }
    FilteredPicker #picker-filter {
        height: 1;
    }
    FilteredPicker #picker-filter {
        margin-bottom: 1;
        color: $text-muted;
    }
    FilteredPicker OptionList {
        height: 1fr;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    BINDINGS = [Binding("escape", "dismiss_none", "Close")]  # noqa: RUF012

    ROWS_NAMED = "rows"
    """What the filter line counts (``3 of 9 models``)."""

    def __init__(
        self, rows: Sequence[tuple[str, str]], title: str, start: str | None = None
    ) -> None:
        super().__init__()
        self.rows = list(rows)
        self.title_text = title
        self.start = start
        self.typed = ""

    @property
    def shown(self) -> list[tuple[str, str]]:
        """The rows the filter lets through, in their order."""
        words = self.typed.casefold().split()
        return [row for row in self.rows if all(w in row[1].casefold() for w in words)]

    @property
    def shown_keys(self) -> list[str]:
        return [key for key, _ in self.shown]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text, id="picker-title", markup=False)
            yield Static(id="picker-filter", markup=False)
            yield OptionList(id="picker-rows")

    def on_mount(self) -> None:
        self._refill()
        self.query_one(OptionList).focus()

    def _refill(self) -> None:
        shown = self.shown
        options = self.query_one(OptionList)
        options.set_options(Option(self.row_text(key, text), id=key) for key, text in shown)
        keys = [key for key, _ in shown]
        options.highlighted = keys.index(self.start) if self.start in keys else 0
        if not shown:
            options.highlighted = None
        line = "Type to filter."
        if self.typed:
            line = (
                f"Filter: {printable_line(self.typed)} · {len(shown)} of {len(self.rows)} "
                f"{self.ROWS_NAMED} · backspace widens"
            )
        self.query_one("#picker-filter", Static).update(line)

    def row_text(self, key: str, text: str) -> Text:
        """How a row shows (its text as one printable line, cut with an ellipsis)."""
        return Text(printable_line(text), no_wrap=True, overflow="ellipsis")

    def on_key(self, event: events.Key) -> None:
        """A character narrows the rows, backspace widens them again."""
        typed = edited_filter(self.typed, event)
        if typed is not None and typed != self.typed:
            self.typed = typed
            self._refill()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
