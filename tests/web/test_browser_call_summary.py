"""A collapsed tool card in the web UI names its call as a person reads it — the command, the
path and lines, the edit's size, the todo list's state — like the terminal UI's cards, live
and when the stored log is drawn again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import TOKEN, make_env
from tests.web.pages import open_page, send, serve, wait_turn_over

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TODOS = [
    {"content": "Write median()", "status": "in_progress"},
    {"content": "Test it", "status": "pending"},
]
CALLS = [
    ("bash", {"command": "echo hi", "timeout": 30}),
    ("read_file", {"path": "notes.txt", "offset": 5, "limit": 10}),
    ("edit_file", {"path": "calc.py", "old": "return a - b", "new": "return a + b"}),
    ("todo_write", {"todos": TODOS}),
    ("grep", {"pattern": "fox", "path": "notes.txt"}),
    (
        "list_dir",
        {"path": "missing", "extra": 1},
    ),  # an argument it does not take: the path still shows
]
EXPECTED = [
    "echo hi (timeout 30 s)",
    "notes.txt (lines 5–14)",
    "calc.py +1 -1",
    "2 todos, 0 done · now: Write median()",
    "fox in notes.txt",
    "missing",
]


def previews(page: Any) -> list[str]:
    return page.locator("#log .row.tool .tool-preview").all_inner_texts()


def test_collapsed_cards_say_what_each_call_does(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    (env.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    env.script = [
        {"toolCalls": [{"name": name, "arguments": args} for name, args in CALLS]},
        {"text": "all done"},
    ]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "go")
        wait_turn_over(page, "all done")
        assert previews(page) == EXPECTED
        page.reload()  # the same cards drawn from the stored log
        page.wait_for_selector("#log .row.tool .tool-status:text-is('done')")
        page.wait_for_function("() => document.querySelectorAll('#log .row.tool').length === 6")
        assert previews(page) == EXPECTED
