"""A prompt command typed in the page's composer, in a real browser: ``/review notes.txt`` sends
``review.md``'s text as the prompt (the conversation shows what was sent); an unknown name is
refused in a toast listing the page's commands (the server's list, word for word) and the prompt
commands there are, and the draft stays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.config import dsh_home
from dsh.web.prompt_commands import WEB_COMMANDS
from tests.web.conftest import make_env
from tests.web.pages import open_page, send, serve, wait_turn_over
from tests.web.test_browser_undo import open_new_session, toast_says, wait_for_row

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_a_prompt_command_sends_its_text_and_an_unknown_one_lists_them(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    env.script = [{"text": "looked"}]
    (dsh_home() / "commands").mkdir(parents=True)
    (dsh_home() / "commands" / "review.md").write_text("Review $ARGUMENTS for bugs, tersely.")
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        send(page, "/Review notes.txt")
        wait_turn_over(page, "looked")
        wait_for_row(page, ".row", "Review notes.txt for bugs, tersely.")
        send(page, "/reveiw notes.txt")
        toast_says(page, "Unknown command /reveiw")
        # the page's list of its own commands is the server's, word for word
        assert page.locator("#toast").inner_text() == (
            f"Unknown command /reveiw (commands: {WEB_COMMANDS}, /init, /review; // sends /)"
        )
        assert page.input_value("#prompt") == "/reveiw notes.txt"
