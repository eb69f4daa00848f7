"""``/undo`` typed in the page's composer, in a real browser: the file edits of the last turn are
taken back and the logged ``command/done`` shows as a note in the conversation (live, and drawn
again from the log); what an undo answers without logging it (a dry run, "nothing to undo") shows
as a note toast, line by line; ``/undo`` with anything but ``--dry-run`` is refused with its
usage, and the unknown-command toast lists ``/undo``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.undo import NOTHING_TO_UNDO
from tests.web.conftest import TOKEN, WebEnv, make_env
from tests.web.pages import open_page, send, serve, view_rows, wait_turn_over

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BEFORE = "def add(a, b):\n    return a - b\n"
AFTER = "def add(a, b):\n    return a + b\n"
EDIT = {"path": "calc.py", "old": "return a - b", "new": "return a + b"}


def edit_env(tmp_path: Path) -> WebEnv:
    env = make_env(tmp_path)
    (env.workspace / "calc.py").write_text(BEFORE)
    env.script = [{"toolCalls": [{"name": "edit_file", "arguments": EDIT}]}, {"text": "fixed"}]
    return env


def open_new_session(page: Any, base_url: str) -> str:
    page.goto(f"{base_url}/?token={TOKEN}")
    page.click("#new-session")
    page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
    return str(page.evaluate("() => window.dsh.sessionId"))


def wait_for_row(page: Any, selector: str, text: str) -> None:
    page.wait_for_function(
        "([sel, text]) => window.dsh.view.allRows()"
        ".some((row) => row.matches(sel) && row.textContent.includes(text))",
        arg=[selector, text],
    )


def note_toast(page: Any) -> str:
    """The newest command answer the page shows as a note in the conversation (not logged: a
    row of its own after the newest), once there is one it had not read (each read is marked)."""
    page.wait_for_function(
        "() => window.dsh.view.allRows().some((r) => r.matches('.notice.local:not(.read)'))"
    )
    text: str = page.evaluate(
        """() => {
            const notes = window.dsh.view.allRows().filter((r) => r.matches('.notice.local'));
            const newest = notes[notes.length - 1];
            newest.classList.add('read');
            return newest.innerText;
        }"""
    )
    return text


def toast_says(page: Any, text: str) -> None:
    page.wait_for_function(
        "(text) => document.getElementById('toast').textContent.includes(text)", arg=text
    )


def test_undo_in_the_composer_restores_the_file_and_shows_its_note(
    browser: Any, tmp_path: Path
) -> None:
    env = edit_env(tmp_path)
    calc = env.workspace / "calc.py"
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        send(page, "fix add")
        wait_turn_over(page, "fixed")
        assert calc.read_text() == AFTER
        turn = json.loads(env.log_lines(sid)[1])["data"]["turn"]
        send(page, "/undo")
        note = f"/undo — Undid turn {turn}:\n  restored calc.py"
        wait_for_row(page, ".row.notice", f"Undid turn {turn}:")
        assert calc.read_text() == BEFORE
        assert page.input_value("#prompt") == ""
        assert page.locator("#toast").is_hidden()
        notices = view_rows(page, ".row.notice")
        assert notices == [note]
        shown = page.locator("#log .row.notice").last.inner_text()
        assert shown.splitlines() == [f"/undo — Undid turn {turn}:", "restored calc.py"]
        wait_for_row(page, ".row.context", "Injected context · undo")
        page.reload()  # the same note drawn from the stored log
        wait_for_row(page, ".row.notice", f"Undid turn {turn}:")
        assert view_rows(page, ".row.notice") == notices
        send(page, "/undo")  # that turn stays undone: nothing is left, and nothing is logged
        assert note_toast(page) == NOTHING_TO_UNDO
        assert view_rows(page, ".row.notice:not(.local)") == notices  # a note, not logged
    types = [json.loads(line)["type"] for line in env.log_lines(sid)]
    assert types[-3:] == ["command/run", "user/message", "command/done"]


def test_a_dry_run_shows_what_it_would_undo_as_a_note_and_changes_nothing(
    browser: Any, tmp_path: Path
) -> None:
    env = edit_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        send(page, "fix add")
        wait_turn_over(page, "fixed")
        log = env.store.log_path(sid).read_bytes()
        send(page, "/undo --dry-run")
        lines = note_toast(page).splitlines()
        assert lines[0].startswith("Would undo turn ") and lines[1:] == ["  would restore calc.py"]
        assert page.is_hidden("#toast")  # not an alert: a note in the conversation
        assert page.input_value("#prompt") == ""
        send(page, "/undo now")
        toast_says(page, "Usage: /undo")
        assert page.locator("#toast").inner_text() == "Usage: /undo [--dry-run] (not now)"
        assert page.locator("#toast").get_attribute("class") in (None, "")
        assert page.input_value("#prompt") == "/undo now"
        send(page, "/redo")
        toast_says(page, "/redo")
        toast = page.locator("#toast").inner_text()
        assert toast.startswith("Unknown command /redo") and "/undo [--dry-run]" in toast
        assert view_rows(page, ".row.notice:not(.local)") == []
    assert (env.workspace / "calc.py").read_text() == AFTER
    assert env.store.log_path(sid).read_bytes() == log


def test_an_undo_note_whose_command_run_is_on_an_older_page_still_shows(
    browser: Any, tmp_path: Path
) -> None:
    """Pages come newest first: the undo's ``command/done`` (citing the turn it undid) can come
    before its ``command/run``; it is not taken for a ``/compact``'s and lost."""
    env = edit_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        sid = open_new_session(page, server.base_url)
        send(page, "fix add")
        wait_turn_over(page, "fixed")
        send(page, "/undo")
        wait_for_row(page, ".row.notice", "Undid turn")
        events = [json.loads(line) for line in env.log_lines(sid)]
        run = next(i for i, e in enumerate(events) if e["type"] == "command/run")
        notices: list[str] = page.evaluate(
            """async ([newer, older]) => {
                const { Projector } = await import('/s/projection.js');
                const projector = new Projector();
                const items = [...newer, ...older].flatMap((event) => projector.feed(event));
                return items.filter((c) => c.op === 'add' && c.item.kind === 'notice')
                    .map((c) => c.item.text);
            }""",
            [events[run + 1 :], events[: run + 1]],
        )
    assert len(notices) == 1 and notices[0].startswith("/undo — Undid turn ")
