"""``/diff`` in the terminal UI: the workspace's changes since its last commit in a screen of
their own, coloured, closed with esc; outside a repository, one note saying why."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.workspace_diff import FileChange, WorkspaceDiff
from dsh.tui.diff_view import NO_CHANGES, DiffScreen, diff_text
from dsh.tui.diffs import ADDED, REMOVED
from tests.tui.conftest import Rig, settle, submit
from tests.tui.test_pilot import run, text_of

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        check=True, capture_output=True,
    )  # fmt: skip


def _diff_body(app: Any) -> str:
    """The diff screen's body as rendered, or "" while the screen or its body is not up yet (a
    loaded machine showed the screen a frame before its body)."""
    if not isinstance(app.screen, DiffScreen):
        return ""
    found = app.screen.query("#diff-body")
    return str(found.first().render()) if found else ""


@needs_git
def test_diff_shows_the_changes_in_a_screen_that_esc_closes(rig: Rig):
    git(rig.workspace, "init", "-q")
    (rig.workspace / "calc.py").write_text("return a - b\n")
    git(rig.workspace, "add", ".")
    git(rig.workspace, "commit", "-qm", "first")
    (rig.workspace / "calc.py").write_text("return a + b\n")
    (rig.workspace / "new.txt").write_text("x\n")
    app = rig.app([])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/diff")
        await settle(pilot, lambda: "new.txt" in _diff_body(app))  # mounted after the screen
        shown = _diff_body(app)
        assert "-return a - b" in shown and "+return a + b" in shown
        assert "Untracked files" in shown and "new.txt" in shown
        await pilot.press("escape")
        await settle(pilot, lambda: not isinstance(app.screen, DiffScreen))
        assert app.focused is app.prompt_box

    run(app, body)


@needs_git
def test_diff_outside_a_repository_is_one_note(rig: Rig, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(rig.workspace.parent))
    app = rig.app([])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/diff")
        await settle(pilot, lambda: "/diff:" in text_of(app))
        assert "is not in a git work tree" in " ".join(text_of(app).split())
        assert not isinstance(app.screen, DiffScreen)

    run(app, body)


@needs_git
def test_a_clean_tree_says_so_without_a_screen(rig: Rig):
    git(rig.workspace, "init", "-q")
    (rig.workspace / "a.txt").write_text("a\n")
    git(rig.workspace, "add", ".")
    git(rig.workspace, "commit", "-qm", "first")
    app = rig.app([])

    async def body(pilot: Any) -> None:
        await submit(pilot, "/diff")
        await settle(pilot, lambda: NO_CHANGES in text_of(app))

    run(app, body)


def test_diff_text_colours_lines_and_says_how_many_it_left_out():
    lines = ("--- a/m.py", "+++ b/m.py", "@@ -1,3 +1,3 @@", "-old", "+new", " same")
    diff = WorkspaceDiff(files=(FileChange("m.py", lines), FileChange("n.py", lines)), untracked=())
    text = diff_text(diff, shown_lines=8)
    plain = text.plain
    assert plain.startswith("m.py\n--- a/m.py\n")
    assert "… 4 more lines (git diff in a shell shows them all)" in plain
    styles = {plain[span.start : span.end].strip(): span.style for span in text.spans}
    assert styles["-old"] == REMOVED and styles["+new"] == ADDED
    assert (
        "\x1b"
        not in diff_text(
            WorkspaceDiff(files=(FileChange("e\x1b[2Jvil", ("+\x1b]0;x\x07",)),), untracked=())
        ).plain
    )
