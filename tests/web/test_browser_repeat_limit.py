"""A turn the loop stopped because the model kept making one read-only call
(``tools.max_repeated_calls``), in a real browser: the page says why, live and after a
reload, and the repeated results carry the note the model was sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from dsh.config import ToolSettings
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import open_page, send, serve, wait_idle

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

READ = {"toolCalls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}
REASON = (
    'Turn 1 stopped: the model called read_file {"path":"notes.txt"} 3 times in this turn and '
    "got the same result each time (tools.max_repeated_calls = 3)"
)


def notices(page: Any) -> list[str]:
    return page.evaluate(  # type: ignore[no-any-return]
        "() => [...document.querySelectorAll('#log .row')]"
        ".map((row) => row.textContent).filter((text) => text.includes('Turn 1 stopped'))"
    )


def test_the_page_says_why_a_repeating_turn_stopped(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    tools = ToolSettings(
        approval="auto", max_repeated_calls=3
    )  # the config key, as a face reads it
    env.settings = msgspec.structs.replace(env.settings, tools=tools)
    env.script = [READ] * 3 + [{"text": "never sent"}]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "what is in notes.txt?")
        page.wait_for_function(
            "(reason) => [...document.querySelectorAll('#log .row')]"
            ".some((row) => row.textContent.includes(reason))",
            arg=REASON,
        )
        wait_idle(page)
        assert [REASON in text for text in notices(page)] == [True]
        assert "never sent" not in page.inner_text("#log")
        page.reload()
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        page.wait_for_function(
            "() => [...document.querySelectorAll('#log .row')]"
            ".some((row) => row.textContent.includes('Turn 1 stopped'))"
        )
        assert [REASON in text for text in notices(page)] == [True]
        outputs = page.evaluate(
            "() => [...document.querySelectorAll('#log .row.tool .tool-output')]"
            ".map((output) => output.textContent)"
        )
        assert ["Same call and same result" in text for text in outputs] == [False, True, True]
