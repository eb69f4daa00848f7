"""The approval prompt's one-line input for a denial's reason (``e``: what the model should do
instead). A paste joins its lines with spaces (Textual's input keeps only the first) and is cut
to the room left under ``REASON_LIMIT`` rather than dropped whole; ``cut`` says a paste was cut."""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from dsh.tools.approval import REASON_LIMIT

PLACEHOLDER = "Deny, and tell the model what to do instead"


class ReasonInput(Input):
    """One line of at most ``REASON_LIMIT`` characters; enter submits it, esc is the screen's."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder=PLACEHOLDER, max_length=REASON_LIMIT, id=id)
        self.cut = False
        """True once a paste was cut to fit under ``REASON_LIMIT``."""

    def _on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()  # not Input's own handler too (which keeps the first line)
        text = " ".join(event.text.split())
        start, end = sorted(self.selection)
        room = REASON_LIMIT - (len(self.value) - (end - start))
        self.cut = self.cut or len(text) > room
        if text[:room]:
            self.replace(text[:room], start, end)
