"""File edits show as coloured unified diffs (approval prompt and tool cards); a bash
approval shows its command as a shell line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsh.tui.approval_preview import describe_call
from dsh.tui.diffs import ADDED, HUNK, NOTE, REMOVED, call_diff
from tests.tui.conftest import (
    SIZE,
    Rig,
    approval_ready,
    repaint,
    run_prompt,
    settle,
    status_at_rest,
    submit,
)
from tests.tui.test_pilot import lines_of, run, text_of

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
EDIT = {
    "path": "calc.py",
    "old": "def add(a, b):\n    return a - b",
    "new": "def add(a, b):\n    return a + b",
}


def test_an_edit_diffs_the_real_file_with_context(tmp_path: Path):
    (tmp_path / "calc.py").write_text(CALC)
    diff = call_diff("edit_file", EDIT, tmp_path)
    assert diff is not None
    assert diff.lines[:3] == ("--- a/calc.py", "+++ b/calc.py", "@@ -1,5 +1,5 @@")
    assert "-    return a - b" in diff.lines and "+    return a + b" in diff.lines
    assert " def sub(a, b):" in diff.lines  # context from the file, not from the arguments
    assert (diff.added, diff.removed) == (1, 1) and diff.summary == "calc.py +1 -1"


def test_without_the_file_an_edit_diffs_its_arguments(tmp_path: Path):
    diff = call_diff("edit_file", EDIT, None)
    assert diff is not None and " def sub(a, b):" not in diff.lines
    assert "+    return a + b" in diff.lines
    outside = dict(EDIT, path="../calc.py")
    (tmp_path.parent / "calc.py").write_text(CALC)
    assert call_diff("edit_file", outside, tmp_path) is None  # never read outside the workspace
    said = describe_call("edit_file", outside, tmp_path).plain  # and the edit would be refused
    assert said.startswith("Will fail: path '../calc.py' is outside the workspace")


def test_a_write_diffs_against_the_current_file_or_nothing(tmp_path: Path):
    new = call_diff("write_file", {"path": "n.py", "content": "x = 1\ny = 2\n"}, tmp_path)
    assert new is not None and (new.added, new.removed) == (2, 0)
    (tmp_path / "n.py").write_text("x = 1\n")
    over = call_diff("write_file", {"path": "n.py", "content": "x = 1\ny = 2\n"}, tmp_path)
    assert over is not None and (over.added, over.removed) == (1, 0)
    assert call_diff("bash", {"command": "ls"}) is None
    assert call_diff("write_file", {"path": "n.py"}) is None


def test_the_approval_text_colours_the_diff_and_shows_a_command_as_a_command(tmp_path: Path):
    (tmp_path / "calc.py").write_text(CALC)
    text = describe_call("edit_file", EDIT, tmp_path)
    assert "{" not in text.plain and '"old"' not in text.plain
    styles = {str(span.style) for span in text.spans}
    assert {str(ADDED), str(REMOVED), str(HUNK)} <= styles
    bash = describe_call("bash", {"command": "rm -rf build/"})
    assert bash.plain == "$ rm -rf build/"


def test_an_edit_approval_shows_the_diff_of_the_file(rig: Rig):
    (rig.workspace / "calc.py").write_text(CALC)
    app = rig.app(
        [{"toolCalls": [{"name": "edit_file", "arguments": EDIT}]}, {"text": "ok"}], approval="ask"
    )

    async def body(pilot: Any) -> None:
        await submit(pilot, "fix add")
        await approval_ready(pilot)
        shown = str(app.screen.query_one("#call").render())
        assert "-    return a - b" in shown and "+    return a + b" in shown
        await pilot.press("o")
        await settle(pilot, lambda: not app.running)
        assert "return a + b" in (rig.workspace / "calc.py").read_text()

    run(app, body)


def test_an_edit_approval_whose_old_text_is_not_in_the_file_says_it_will_fail(rig: Rig):
    """No diff of an edit that will not happen: the prompt says why it will fail, in the
    tool's words, over the call's arguments; allowed, it fails so, and the file is as it was."""
    (rig.workspace / "calc.py").write_text(CALC)
    stale = dict(EDIT, old="def add(a, b):\n    return a * b")
    app = rig.app(
        [{"toolCalls": [{"name": "edit_file", "arguments": stale}]}, {"text": "ok"}],
        approval="ask",
    )

    async def body(pilot: Any) -> None:
        await submit(pilot, "fix add")
        await approval_ready(pilot)
        shown = str(app.screen.query_one("#call").render())
        assert shown.splitlines()[:2] == [
            "Will fail: old text not found in calc.py; read the file and copy the text exactly "
            "(including whitespace)",
            "The call's arguments:",
        ]
        assert "@@" not in shown and "--- a/calc.py" not in shown
        assert '"old": "def add(a, b):\\n    return a * b"' in shown
        await pilot.press("o")
        await settle(pilot, lambda: not app.running)
        assert "old text not found in calc.py" in text_of(app)  # what the tool answered
        assert (rig.workspace / "calc.py").read_text() == CALC

    run(app, body)


def test_edit_cards_summarise_the_change_and_expand_to_the_diff(rig: Rig):
    (rig.workspace / "calc.py").write_text(CALC)
    app = rig.app([{"toolCalls": [{"name": "edit_file", "arguments": EDIT}]}, {"text": "Fixed."}])

    async def body(pilot: Any) -> None:
        await run_prompt(pilot, "fix add")
        assert "  ▸ edit_file  calc.py +1 -1" in lines_of(app)
        await pilot.press("ctrl+o")
        lines = lines_of(app)
        assert "    diff" in lines and "      +    return a + b" in lines
        assert '"old"' not in text_of(app)

    run(app, body)


def test_edit_approval_snapshot(snap_compare, rig: Rig):
    (rig.workspace / "calc.py").write_text(CALC)
    app = rig.app([{"toolCalls": [{"name": "edit_file", "arguments": EDIT}]}], approval="ask")

    async def ask(pilot: Any) -> None:
        await submit(pilot, "fix add")
        await approval_ready(pilot)
        await settle(pilot, lambda: status_at_rest(app))
        await repaint(pilot)  # the status bar under the modal, as it is now

    assert snap_compare(app, terminal_size=SIZE, run_before=ask)


def test_an_edit_card_shows_the_diff_the_approval_showed(rig: Rig):
    (rig.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    edit = {"path": "calc.py", "old": "return a - b", "new": "return a + b"}
    app = rig.app(
        [{"toolCalls": [{"name": "edit_file", "arguments": edit}]}, {"text": "ok"}],
        approval="ask",
    )
    expected = [
        "--- a/calc.py",
        "+++ b/calc.py",
        "@@ -1,2 +1,2 @@",
        " def add(a, b):",
        "-    return a - b",
        "+    return a + b",
    ]

    async def body(pilot: Any) -> None:
        await submit(pilot, "fix add")
        await approval_ready(pilot)
        assert str(app.screen.query_one("#call").render()).splitlines() == expected
        await pilot.press("o")
        await settle(pilot, lambda: not app.running)
        await pilot.press("ctrl+o")
        lines = lines_of(app)
        start = lines.index("    diff") + 1
        assert lines[start : start + len(expected)] == [f"      {line}" for line in expected]
        assert "edited calc.py: replaced 1 occurrence (line 2)" in text_of(app)

    run(app, body)


def test_a_removed_sql_comment_and_an_added_increment_are_lines_not_file_headers(
    tmp_path: Path,
):
    """Only the lines before the first hunk are headers: `-- old comment` removed and
    `++counter;` added count as a change and are coloured as one."""
    (tmp_path / "q.sql").write_text("-- old comment\nselect 1;\n")
    edit = {"path": "q.sql", "old": "-- old comment", "new": "++counter;"}
    diff = call_diff("edit_file", edit, tmp_path)
    assert diff is not None and diff.summary == "q.sql +1 -1" and diff.headers == 2
    text = describe_call("edit_file", edit, tmp_path)
    styles = {span.style for span in text.spans}
    assert ADDED in styles and REMOVED in styles


def test_a_missing_final_newline_is_a_dim_note_not_a_changed_line(tmp_path: Path):
    """Dropping only a file's final newline shows git's note under the old last line (dim,
    counted as no change), so the card does not read as the same line removed and added."""
    (tmp_path / "v.txt").write_text("one\ntwo")
    diff = call_diff("write_file", {"path": "v.txt", "content": "one\ntwo\n"}, tmp_path)
    assert diff is not None and diff.summary == "v.txt +1 -1"
    assert diff.lines[-3:] == ("-two", "\\ No newline at end of file", "+two")
    text = describe_call("write_file", {"path": "v.txt", "content": "one\ntwo\n"}, tmp_path)
    note = text.plain.index("\\ No newline")
    assert any(span.style == NOTE and span.start <= note < span.end for span in text.spans)
