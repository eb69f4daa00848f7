"""The prompt box: one line of input with a history of earlier prompts (up / down)."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input

PLACEHOLDER = "Ask dsh…  (/help for commands, esc cancels a running turn)"


class PromptBox(Input):
    BINDINGS = [  # noqa: RUF012 (Textual's declaration style)
        Binding("up", "history(-1)", "Earlier prompt", show=False),
        Binding("down", "history(1)", "Later prompt", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder=PLACEHOLDER, id=id)
        self.history: list[str] = []
        self._index: int | None = None
        self._draft = ""

    def remember(self, text: str) -> None:
        """Add a submitted prompt (a repeat of the last one is kept once)."""
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
        self._index = None

    def seed(self, prompts: list[str]) -> None:
        self.history = list(prompts)
        self._index = None

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        if self._index is None:
            if step > 0:
                return
            self._draft = self.value
            index = len(self.history) - 1
        else:
            index = self._index + step
            if index >= len(self.history):
                self._index = None
                self._show(self._draft)
                return
            index = max(0, index)
        self._index = index
        self._show(self.history[index])

    def _show(self, text: str) -> None:
        self.value = text
        self.cursor_position = len(text)
