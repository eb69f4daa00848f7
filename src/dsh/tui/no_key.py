"""What the TUI shows instead of crashing when the provider's API key is missing."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static

from dsh.errors import MissingApiKeyError


def no_key_text(error: MissingApiKeyError) -> str:
    who = f" for {error.provider}" if error.provider else ""
    return (
        f"dsh needs an API key{who}.\n\n"
        f"Set the environment variable {error.variable}, for example:\n\n"
        f"    export {error.variable}=…\n\n"
        "then start dsh again.\n\n"
        "No key at hand? `dsh demo` runs a scripted coding session that needs none.\n\n"
        "Press q to quit."
    )


class NoKeyScreen(Screen[None]):
    DEFAULT_CSS = """
    NoKeyScreen {
        align: center middle;
    }
    NoKeyScreen > Vertical {
        width: 80;
        max-width: 100%;
        height: auto;
        border: round $error;
        padding: 1 3;
    }
    NoKeyScreen Static {
        width: 100%;
        height: auto;
    }
    """

    BINDINGS = [  # noqa: RUF012 (Textual's declaration style)
        Binding("q,escape,ctrl+c", "leave", "Quit", priority=True),
    ]

    def __init__(self, error: MissingApiKeyError) -> None:
        super().__init__()
        self.error = error

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(no_key_text(self.error), id="no-key", markup=False)

    def action_leave(self) -> None:
        self.app.exit(return_code=2, message=f"dsh: error: {self.error}")
