"""The line under the composer: the keys people need now, as many as its width holds, or what
the composer has to say instead (completion candidates, a cleared draft).

A hint is a row of items, each with a rank: when the line is too narrow for all of them, the
highest ranks go first and the rest keep their order, so an 80-column terminal never shows a
hint cut in the middle of a word. What the keys do depends on what runs: esc clears an idle
draft, cancels a running turn, and takes a queued draft back first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from rich.text import Text
from textual import events
from textual.widgets import Static

Hint = tuple[str, int]
"""An item of a hint line and its rank (0 stays longest)."""
EscMeans = Literal["clears", "cancels", "stops", "unqueues", "waits"]
SEPARATOR = " · "

ESC: dict[EscMeans, str] = {
    "clears": "esc clears",
    "cancels": "esc cancels the turn",
    "stops": "esc cancels it",
    "unqueues": "esc takes back the queued draft",
    "waits": "",
}
"""What the hint line says of esc: a turn is cancelled, the other work the status bar names (a
``!cmd``, a ``/compact``) is "it"; nothing while esc does nothing (an ``/undo``)."""


def composer_keys(esc: EscMeans = "clears") -> tuple[Hint, ...]:
    """The composer's keys; ``esc``: what esc does now."""
    keys: tuple[Hint, ...] = (
        ("enter send", 0),
        ("ctrl+j newline", 2),
        ("tab completes", 3),
        (ESC[esc], 1),
        ("pgup/pgdn scroll", 4),
        ("/help", 5),
    )
    return tuple(key for key in keys if key[0])


def fit_hints(items: Sequence[Hint], width: int) -> str:
    """``items`` joined in their order, leaving out the highest ranks until the line fits
    ``width`` columns (the rank-0 item is kept even when it alone does not fit)."""
    kept = list(items)
    while len(kept) > 1 and len(SEPARATOR.join(text for text, _ in kept)) > width:
        kept.remove(max(kept, key=lambda item: item[1]))
    return SEPARATOR.join(text for text, _ in kept)


class HintLine(Static):
    """Shows the composer's keys fitted to its width, unless something is said over them: a
    text as it is (``say``) or another hint (``say_hints``, the find bar's keys)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self._keys: Sequence[Hint] = composer_keys()
        self._over: str | Sequence[Hint] | None = None

    def set_keys(self, keys: Sequence[Hint]) -> None:
        """The composer's keys as they are now (shown once nothing is said over them)."""
        if keys != self._keys:
            self._keys = keys
            self.refresh()

    def say(self, text: str) -> None:
        """Show ``text`` as it is (cut at the edge) until ``clear``."""
        self._over = text
        self.refresh()

    def say_hints(self, items: Sequence[Hint]) -> None:
        """Show ``items`` fitted to the width until ``clear``."""
        self._over = items
        self.refresh()

    def clear(self) -> None:
        """Back to the composer's keys."""
        self._over = None
        self.refresh()

    def render(self) -> Text:
        over = self._over
        if isinstance(over, str):
            return Text(over, no_wrap=True, overflow="ellipsis")
        items = self._keys if over is None else over
        return Text(fit_hints(items, self.content_size.width), no_wrap=True)

    def on_resize(self, event: events.Resize) -> None:
        self.refresh()
