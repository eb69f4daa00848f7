"""An edit card shows the diff the edit made in the file (logged in its result's meta): the
file's line numbers and indentation, live and after a reload, not the arguments alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import TOKEN, make_env
from tests.web.pages import open_page, send, serve, wait_turn_over

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

EDIT = {"path": "calc.py", "old": "return a - b", "new": "return a + b"}


def edit_card_rows(page: Any) -> list[list[str]]:
    """The edit card's diff: its hunk header, then each line's numbers, sign and code."""
    card = page.locator("#log .row.tool[data-call]").first
    card.locator("summary").first.click()
    rows: list[list[str]] = card.locator(".diff-body > div").evaluate_all(
        """(rows) => rows.map((row) => row.classList.contains('diff-hunk')
            ? [row.textContent]
            : [...row.children].map((cell) => cell.textContent))"""
    )
    return rows


def test_an_edit_card_shows_the_real_line_numbers_and_indentation(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    (env.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    env.script = [{"toolCalls": [{"name": "edit_file", "arguments": EDIT}]}, {"text": "fixed"}]
    expected = [
        ["@@ −1,2 +1,2 @@"],
        ["1", "1", " ", "def add(a, b):"],
        ["2", "", "-", "    return a - b"],
        ["", "2", "+", "    return a + b"],
    ]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "fix add")
        wait_turn_over(page, "fixed")
        assert edit_card_rows(page) == expected
        assert "(line 2)" in page.locator("#log .row.tool .tool-output").first.inner_text()
        page.reload()  # the same card drawn from the stored log
        page.wait_for_selector("#log .row.tool .tool-status:text-is('done')")
        assert edit_card_rows(page) == expected


def test_an_edit_approval_shows_the_real_line_numbers_before_it_runs(
    browser: Any, tmp_path: Path
) -> None:
    """The page cannot read the file: the server sends the approval with the diff it made
    against the file as it is, so the person approves what will really change."""
    env = make_env(tmp_path, approval="ask")
    (env.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    env.script = [{"toolCalls": [{"name": "edit_file", "arguments": EDIT}]}, {"text": "fixed"}]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "fix add")
        approval = page.locator("#approvals .approval")
        approval.wait_for()
        rows = approval.locator(".diff-body > div").evaluate_all(
            """(rows) => rows.map((row) => row.classList.contains('diff-hunk')
                ? [row.textContent]
                : [...row.children].map((cell) => cell.textContent))"""
        )
        assert rows == [
            ["@@ −1,2 +1,2 @@"],
            ["1", "1", " ", "def add(a, b):"],
            ["2", "", "-", "    return a - b"],
            ["", "2", "+", "    return a + b"],
        ]
        approval.locator("button[data-answer='once']").click()
        wait_turn_over(page, "fixed")


def test_a_missing_final_newline_shows_as_a_note_not_as_a_numbered_line(
    browser: Any, tmp_path: Path
) -> None:
    """A file without a final newline: the logged diff's ``\\ No newline at end of file``
    lines show as notes under the lines they speak of, numbering no line of the file."""
    env = make_env(tmp_path)
    (env.workspace / "calc.py").write_text("def add(a, b):\n    return a - b")
    env.script = [{"toolCalls": [{"name": "edit_file", "arguments": EDIT}]}, {"text": "fixed"}]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "fix add")
        wait_turn_over(page, "fixed")
        card = page.locator("#log .row.tool[data-call]").first
        card.locator("summary").first.click()
        rows = card.locator(".diff-body > div").evaluate_all(
            """(rows) => rows.map((row) => row.children.length
                ? [...row.children].map((cell) => cell.textContent)
                : [row.className, row.textContent])"""
        )
        assert rows == [
            ["diff-hunk", "@@ −1,2 +1,2 @@"],
            ["1", "1", " ", "def add(a, b):"],
            ["2", "", "-", "    return a - b"],
            ["diff-note", "No newline at end of file"],
            ["", "2", "+", "    return a + b"],
            ["diff-note", "No newline at end of file"],
        ]
        assert card.locator(".diff-head").inner_text().split() == ["calc.py", "+1", "−1"]


def test_an_edit_approval_that_would_fail_says_why_instead_of_a_diff(
    browser: Any, tmp_path: Path
) -> None:
    """``old`` not in the file: the server finds the edit would fail and the page says so in
    the tool's words, over the call's arguments, with no diff of the file."""
    env = make_env(tmp_path, approval="ask")
    (env.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    stale = dict(EDIT, old="return a * b")
    env.script = [{"toolCalls": [{"name": "edit_file", "arguments": stale}]}, {"text": "so"}]
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "fix add")
        approval = page.locator("#approvals .approval")
        approval.wait_for()
        assert approval.locator(".approval-fails").inner_text() == (
            "Will fail: old text not found in calc.py; read the file and copy the text exactly "
            "(including whitespace)"
        )
        assert "The call's arguments:" in approval.inner_text()
        assert "def add(a, b):" not in approval.inner_text()  # no line of the file's diff
        approval.locator("button[data-answer='once']").click()
        wait_turn_over(page, "so")
    assert (env.workspace / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
