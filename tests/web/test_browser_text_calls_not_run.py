"""The web page says, in a dim note under a small model's reply, that the tool call it wrote
inside its prose was not run (``textCallsNotRun``), live and drawn again from the log; the
page's ``notRunNote`` (the projection's mirror of ``dsh.transcript.render.not_run_note``)
gives what Python gives. A real browser on a real server, the scripted model on a route that
reads calls written as text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dsh.config import ProviderSettings
from dsh.transcript import not_run_note
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import first_page_loaded, open_page, send, serve, view_rows, wait_turn_over
from tests.web.test_browser_new_session import click_new_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

EDIT = {"name": "edit_file", "arguments": {"path": "notes.txt", "old": "fox", "new": "cat"}}
CLAIM = f"I will fix it.\n<tools>{json.dumps(EDIT)}</tools>\nDone: the file is fixed."


def test_the_pages_note_is_pythons(browser: Any, tmp_path: Path) -> None:
    cases = [["edit_file"], ["edit_file", "bash", "edit_file"], ["mcp__docs__write"], ["a", "b"]]
    with serve(make_env(tmp_path)) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        shown = page.evaluate(
            """async (cases) => {
                const { notRunNote } = await import('/s/projection.js');
                return cases.map(notRunNote);
            }""",
            cases,
        )
    assert shown == [not_run_note(names) for names in cases]


def test_the_reply_shows_the_note_live_and_after_a_reload(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.settings = msgspec.structs.replace(
        env.settings, provider=ProviderSettings(text_tool_calls=True)
    )
    env.script = [{"text": CLAIM}]
    note = not_run_note(["edit_file"])
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        click_new_session(page)
        send(page, "fix notes.txt")
        wait_turn_over(page, "the file is fixed")
        page.wait_for_function(
            "() => window.dsh.view.allRows().some((r) => r.querySelector('.not-run'))"
        )
        assert [row.endswith(note) for row in view_rows(page, ".row.assistant")] == [True]
        assert page.locator(".row.assistant .not-run").all_inner_texts() == [note]
        page.reload()  # drawn again from the stored log
        first_page_loaded(page)
        assert page.locator(".row.assistant .not-run").all_inner_texts() == [note]
    assert "fox" in (env.workspace / "notes.txt").read_text()  # nothing ran
