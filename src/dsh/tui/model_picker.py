"""``/model``'s picker: the models the route's server lists (``dsh.llm.model_list``), the one in
use marked and highlighted (or the dated snapshot its name is the alias of); typing filters the
rows (each word typed must be in the name, case aside), backspace widens them again, enter
chooses, esc closes without a change."""

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

from dsh.agent.model_choice import is_listed
from dsh.errors import printable_line
from dsh.tui.picker import edited_filter

IN_USE = "  (in use)"


class ModelPicker(ModalScreen[str | None]):
    """Choose a model; dismisses with its name, or None (esc)."""

    DEFAULT_CSS = """
    ModelPicker {
        align: center middle;
    }
    ModelPicker > Vertical {
        width: 80%;
        height: 80%;
        border: thick $accent;
        background: $surface;
        padding: 0 1;
    }
    ModelPicker #model-title, ModelPicker #model-filter {
        height: 1;
    }
    ModelPicker #model-filter {
        margin-bottom: 1;
        color: $text-muted;
    }
    ModelPicker OptionList {
        height: 1fr;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    BINDINGS = [Binding("escape", "dismiss_none", "Close")]  # noqa: RUF012

    def __init__(self, models: Sequence[str], current: str, provider: str) -> None:
        super().__init__()
        self.models = list(models)
        self.current = current
        self.in_use = next((m for m in self.models if m == current), None) or next(
            (m for m in self.models if is_listed(current, (m,))), None
        )
        """The row of the model in use: its own, else the snapshot its name is the alias of."""
        self.provider = provider
        self.typed = ""

    @property
    def shown(self) -> list[str]:
        """The models the filter lets through, in the server's order."""
        words = self.typed.casefold().split()
        return [m for m in self.models if all(w in m.casefold() for w in words)]

    def compose(self) -> ComposeResult:
        title = (
            f"Models {printable_line(self.provider)} lists ({len(self.models)}): type to "
            "filter, enter uses the model for the next turns, esc closes"
        )
        with Vertical():
            yield Static(title, id="model-title", markup=False)
            yield Static(id="model-filter", markup=False)
            yield OptionList(id="models")

    def on_mount(self) -> None:
        self._refill()
        self.query_one(OptionList).focus()

    def _refill(self) -> None:
        shown = self.shown
        options = self.query_one(OptionList)
        options.set_options(Option(self._row(m), id=m) for m in shown)
        options.highlighted = shown.index(self.in_use) if self.in_use in shown else 0
        if not shown:
            options.highlighted = None
        typed = printable_line(self.typed)
        line = "Type to filter by name."
        if self.typed:
            line = f"Filter: {typed} · {len(shown)} of {len(self.models)} · backspace widens"
        self.query_one("#model-filter", Static).update(line)

    def _row(self, model: str) -> Text:
        row = Text(printable_line(model), no_wrap=True, overflow="ellipsis")
        if model == self.in_use:
            row.stylize("bold")
            row.append(IN_USE, style="italic")
        return row

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
