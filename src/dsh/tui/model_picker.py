"""``/model``'s picker: the models the route's server lists (``dsh.llm.model_list``), the one in
use marked and highlighted (or the dated snapshot its name is the alias of); typing filters the
rows (each word typed must be in the name, case aside), backspace widens them again, enter
chooses, esc closes without a change (``dsh.tui.filtered_picker``)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from dsh.agent.model_choice import is_listed
from dsh.errors import printable_line
from dsh.tui.filtered_picker import FilteredPicker

IN_USE = "  (in use)"


class ModelPicker(FilteredPicker):
    """Choose a model; dismisses with its name, or None (esc)."""

    ROWS_NAMED = "models"

    def __init__(self, models: Sequence[str], current: str, provider: str) -> None:
        self.models = list(models)
        self.current = current
        self.in_use = next((m for m in self.models if m == current), None) or next(
            (m for m in self.models if is_listed(current, (m,))), None
        )
        """The row of the model in use: its own, else the snapshot its name is the alias of."""
        self.provider = provider
        title = (
            f"Models {printable_line(provider)} lists ({len(self.models)}): type to "
            "filter, enter uses the model for the next turns, esc closes"
        )
        super().__init__([(m, m) for m in self.models], title, start=self.in_use)

    def row_text(self, key: str, text: str) -> Text:
        row = super().row_text(key, text)
        if key == self.in_use:
            row.stylize("bold")
            row.append(IN_USE, style="italic")
        return row
