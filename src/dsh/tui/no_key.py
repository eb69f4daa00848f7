"""What the TUI shows instead of crashing when the provider's API key is missing."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static

from dsh.errors import MissingApiKeyError


def no_key_text(error: MissingApiKeyError) -> str:
    """The missing key, and every way into dsh: each provider's key, a local server, no key."""
    who = f" for {error.provider}" if error.provider else ""
    found = "".join(f"    dsh --provider {name}   ({key} is set)\n" for name, key in error.keyed)
    return (
        f"dsh needs an API key{who}. Set {error.variable} and start dsh again:\n\n"
        f"    export {error.variable}=…\n\n"
        + (f"Or start it on a provider whose key is set:\n\n{found}\n" if found else "")
        + "Other ways in:\n\n"
        "  DeepSeek       export DEEPSEEK_API_KEY=…   then  dsh\n"
        "  Anthropic      export ANTHROPIC_API_KEY=…  then  dsh --provider anthropic\n"
        "  OpenAI         export OPENAI_API_KEY=…     then  dsh --provider openai\n"
        "  Local server   an OpenAI-compatible base URL (Ollama, vLLM, LM Studio):\n"
        "                 dsh --base-url http://localhost:11434/v1 --model qwen2.5-coder\n"
        "                 (sent no key, not even OPENAI_API_KEY; a server started with a key\n"
        '                 gets the variable you name: provider.api_key_env = "MY_VAR")\n'
        "  No key at all  dsh demo --tui   a scripted session on a throwaway project\n"
        "                 dsh --script FILE   your own scripted model\n\n"
        "Press q to quit."
    )


class NoKeyScreen(Screen[None]):
    DEFAULT_CSS = """
    NoKeyScreen {
        align: center middle;
    }
    NoKeyScreen > Vertical {
        width: 90;
        max-width: 100%;
        height: auto;
        border: round $error;
        padding: 1 2;
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
