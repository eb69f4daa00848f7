"""What an approval shows of a file-writing call before it runs: the diff of the file, or,
when the call would fail, the tool's own error and no diff (a diff of an edit that will not
happen misled people into approving it)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from dsh.errors import ToolError
from dsh.tools.base import ToolContext
from dsh.tools.files import EditFileTool, WriteFileTool
from dsh.tools.planned_change import planned_change, planned_diff

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def files(workspace: Path, outside: Path) -> Path:
    (workspace / "calc.py").write_text(CALC)
    (workspace / "pkg").mkdir()
    (workspace / "latin1.txt").write_bytes(b"caf\xe9\n")
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    return workspace


@pytest.fixture(autouse=True)
def tool_workspace(files: Path) -> None:
    """A copy of the workspace for the tool to run in (so a call it runs changes nothing
    the approval reads); the same names, so its errors name the same files."""
    copy = files.parent / "copy"
    copy.mkdir()
    for path in files.iterdir():
        if path.is_dir():
            (copy / path.name).mkdir()
        else:
            (copy / path.name).write_bytes(path.read_bytes())


EDITS: dict[str, dict[str, Any]] = {
    "old-missing": {"path": "calc.py", "old": "return a * b", "new": "return a + b"},
    "old-twice": {"path": "calc.py", "old": "return a - b", "new": "return a + b"},
    "old-empty": {"path": "calc.py", "old": "", "new": "x"},
    "old-is-new": {"path": "calc.py", "old": "def add", "new": "def add"},
    "no-file": {"path": "gone.py", "old": "a", "new": "b"},
    "directory": {"path": "pkg", "old": "a", "new": "b"},
    "outside": {"path": "../outside/secret.txt", "old": "top", "new": "no"},
    "not-utf8": {"path": "latin1.txt", "old": "caf", "new": "CAF"},
    "binary": {"path": "blob.bin", "old": "a", "new": "b"},
    "works": {"path": "calc.py", "old": "def add(a, b):\n    return a - b", "new": "x = 1"},
}
WRITES: dict[str, dict[str, Any]] = {
    "directory": {"path": "pkg", "content": "x"},
    "outside": {"path": "../outside/new.txt", "content": "x"},
    "new-file": {"path": "new.py", "content": "x = 1\n"},
    "over-text": {"path": "calc.py", "content": "x = 1\n"},
}


def tool_error(tool: Any, args: dict[str, Any], workspace: Path) -> str | None:
    """What the tool itself answers the call with: its error, or None when it runs."""
    ctx = ToolContext(workspace=workspace.resolve(), session_id="s", call_id="c")
    try:
        asyncio.run(tool.run(args, ctx))
    except ToolError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("case", sorted(EDITS))
def test_an_edit_approval_says_it_fails_exactly_when_the_tool_would(files: Path, case: str):
    """The approval's reason is the error the tool then gives, word for word; a call the
    tool runs is shown as its diff, a call it refuses as no diff at all."""
    args = EDITS[case]
    change = planned_change("edit_file", args, files)
    assert change is not None
    expected = tool_error(EditFileTool(), args, files.parent / "copy")
    assert change.fails == expected
    assert (change.lines is None) == (expected is not None)


@pytest.mark.parametrize("case", sorted(WRITES))
def test_a_write_approval_says_it_fails_exactly_when_the_tool_would(files: Path, case: str):
    args = WRITES[case]
    change = planned_change("write_file", args, files)
    assert change is not None
    expected = tool_error(WriteFileTool(), args, files.parent / "copy")
    assert change.fails == expected
    assert (change.lines is None) == (expected is not None)


def test_old_text_not_in_the_file_shows_why_and_no_diff(files: Path):
    change = planned_change("edit_file", EDITS["old-missing"], files)
    assert change is not None and change.lines is None
    assert change.fails == (
        "old text not found in calc.py; read the file and copy the text exactly "
        "(including whitespace)"
    )
    assert planned_diff("edit_file", EDITS["old-missing"], files) is None


def test_an_edit_that_works_diffs_the_real_file(files: Path):
    change = planned_change("edit_file", EDITS["works"], files)
    assert change is not None and change.fails is None and change.note is None
    assert change.lines is not None
    assert change.lines[:3] == ("--- a/calc.py", "+++ b/calc.py", "@@ -1,5 +1,4 @@")
    assert " def sub(a, b):" in change.lines  # the file's context, not the arguments'


def test_without_a_workspace_the_arguments_alone_are_diffed(files: Path):
    """A tool card before its result has no file to read: old → new, nothing judged."""
    change = planned_change("edit_file", EDITS["old-missing"], None)
    assert change is not None and change.fails is None
    assert change.lines is not None and "+    return a + b" not in change.lines
    assert "-return a * b" in change.lines and "+return a + b" in change.lines


def test_other_tools_and_arguments_that_name_no_edit_have_no_planned_change(files: Path):
    assert planned_change("bash", {"command": "ls"}, files) is None
    assert planned_change("edit_file", {"path": "calc.py", "old": 1, "new": "x"}, files) is None
    assert planned_change("write_file", {"path": "calc.py"}, files) is None


def test_a_write_that_creates_a_file_diffs_it_from_dev_null(files: Path):
    """A new file has no old side: ``--- /dev/null``, as git shows it (not ``--- a/new.txt``)."""
    change = planned_change("write_file", {"path": "new.txt", "content": "one\ntwo\n"}, files)
    assert change is not None and change.fails is None and change.lines is not None
    assert change.lines[:3] == ("--- /dev/null", "+++ b/new.txt", "@@ -0,0 +1,2 @@")
    over = planned_change("write_file", {"path": "calc.py", "content": "x = 1\n"}, files)
    assert over is not None and over.lines is not None and over.lines[0] == "--- a/calc.py"


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
def test_a_path_through_a_symlink_names_the_file_it_changes(files: Path, tool: str):
    """A repository ships ``NOTES.md -> src/auth.py``: approving a change of ``NOTES.md`` must
    say that ``src/auth.py`` is the file that changes (the audit's repro rewrote a password
    check that way, the prompt naming only NOTES.md)."""
    (files / "src").mkdir()
    (files / "src" / "auth.py").write_text("return bcrypt.verify(p, HASH)\n")
    (files / "NOTES.md").symlink_to("src/auth.py")
    (files / "docs").symlink_to("src")  # a directory on the way leads elsewhere too
    args: dict[str, Any] = (
        {"path": "NOTES.md", "content": "return True\n"}
        if tool == "write_file"
        else {"path": "NOTES.md", "old": "bcrypt.verify(p, HASH)", "new": "True"}
    )
    change = planned_change(tool, args, files)
    assert change is not None and change.elsewhere
    assert change.note == "NOTES.md is a link: this changes src/auth.py"
    assert change.lines is not None and "+return True" in change.lines
    through_dir = planned_change(tool, {**args, "path": "docs/auth.py"}, files)
    assert through_dir is not None and through_dir.elsewhere
    assert through_dir.note == "docs/auth.py is a link: this changes src/auth.py"
    direct = planned_change(tool, {**args, "path": "./src/auth.py"}, files)
    assert direct is not None and not direct.elsewhere and direct.note is None
