"""``/diff``'s changes of a workspace since its last commit, read off real git repositories."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dsh.agent import workspace_diff as module
from dsh.agent.workspace_diff import (
    WorkspaceDiffError,
    render_workspace_diff,
    split_files,
    workspace_diff,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        check=True, capture_output=True,
    )  # fmt: skip


def repo_with_commit(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "notes.md").write_text("keep\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    return repo


def test_staged_and_unstaged_edits_show_against_the_last_commit_with_untracked_files_named(
    tmp_path: Path,
) -> None:
    repo = repo_with_commit(tmp_path)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "notes.md").write_text("keep\nmore\n")
    git(repo, "add", "notes.md")  # staged: still a change since the last commit
    (repo / "new_test.py").write_text("assert True\n")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "run.log").write_text("ignored\n")

    diff = workspace_diff(repo)

    assert [change.path for change in diff.files] == ["calc.py", "notes.md"]
    calc = diff.files[0].lines
    assert "-    return a - b" in calc and "+    return a + b" in calc
    assert not any(line.startswith(("diff --git", "index ")) for line in calc)
    assert diff.untracked == (".gitignore", "new_test.py")  # run.log is ignored
    text = render_workspace_diff(diff)
    assert "+more" in text and "Untracked files:\n  .gitignore\n  new_test.py" in text


def test_a_clean_tree_says_there_are_no_changes(tmp_path: Path) -> None:
    diff = workspace_diff(repo_with_commit(tmp_path))
    assert diff.empty
    assert render_workspace_diff(diff) == "No changes since the last commit."


def test_a_repository_without_a_commit_compares_against_the_empty_tree(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("hello\n")
    git(repo, "add", "a.txt")

    diff = workspace_diff(repo)

    assert [change.path for change in diff.files] == ["a.txt"]
    assert "+hello" in diff.files[0].lines


def test_a_workspace_below_the_top_shows_its_own_paths(tmp_path: Path) -> None:
    repo = repo_with_commit(tmp_path)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "m.py").write_text("x = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "pkg")
    (repo / "pkg" / "m.py").write_text("x = 2\n")
    (repo / "calc.py").write_text("changed outside pkg\n")

    diff = workspace_diff(repo / "pkg")

    assert [change.path for change in diff.files] == ["m.py"]


def test_outside_a_repository_and_without_git_the_error_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    with pytest.raises(WorkspaceDiffError, match=r"is not in a git work tree") as caught:
        workspace_diff(plain)
    assert "\n" not in str(caught.value)

    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(WorkspaceDiffError, match=r"^git is not installed"):
        workspace_diff(plain)


def test_a_diff_over_the_cap_is_cut_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = repo_with_commit(tmp_path)
    (repo / "calc.py").write_text("".join(f"line {n}\n" for n in range(20_000)))
    monkeypatch.setattr(module, "MAX_DIFF_BYTES", 10_000)

    diff = workspace_diff(repo)

    assert diff.truncated
    assert sum(len(line) + 1 for change in diff.files for line in change.lines) <= 10_000 + 200
    assert "the rest is left out" in render_workspace_diff(diff)


def test_a_repository_cannot_make_git_run_an_external_diff_program(tmp_path: Path) -> None:
    """A repository's config naming a diff driver or an external diff is a command: the
    diff is git's own."""
    repo = repo_with_commit(tmp_path)
    marker = tmp_path / "ran"
    git(repo, "config", "diff.external", f"touch {marker}; true")
    git(repo, "config", "diff.evil.command", f"touch {marker}; true")
    git(repo, "config", "diff.evil.textconv", f"touch {marker}; cat")
    (repo / ".gitattributes").write_text("*.py diff=evil\n")
    (repo / "calc.py").write_text("changed\n")

    diff = workspace_diff(repo)

    assert not marker.exists()
    assert "+changed" in next(c for c in diff.files if c.path == "calc.py").lines


def test_split_files_names_a_binary_change_by_its_header() -> None:
    text = (
        "diff --git a/img.png b/img.png\nindex 1..2 100644\n"
        "Binary files a/img.png and b/img.png differ\n"
    )
    (change,) = split_files(text)
    assert change.path == "img.png"
    assert change.lines == ("Binary files a/img.png and b/img.png differ",)
