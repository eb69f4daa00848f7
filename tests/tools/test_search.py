from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from dsh.errors import ToolError
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.search import GlobTool, GrepTool


def call(tool: Any, ctx: ToolContext, **args: Any) -> ToolOutput:
    result: ToolOutput = asyncio.run(tool.run(args, ctx))
    return result


def refused(tool: Any, ctx: ToolContext, **args: Any) -> ToolError:
    with pytest.raises(ToolError) as err:
        call(tool, ctx, **args)
    return err.value


@pytest.fixture
def tree(workspace: Path) -> Path:
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "pkg" / "mod.py").write_text("def hello():\n    return 'hi'\n")
    (workspace / "src" / "main.py").write_text("import pkg\nprint('hello world')\n")
    (workspace / "README.md").write_text("# Hello\n")
    (workspace / "img.png").write_bytes(b"\x89PNG\x00\x00hello")
    for skipped in (".git", "node_modules", ".venv"):
        (workspace / skipped).mkdir()
        (workspace / skipped / "x.py").write_text("hello = 1\n")
    return workspace


# glob


def test_glob_recursive_pattern_sorted(tree: Path, ctx: ToolContext) -> None:
    assert call(GlobTool(), ctx, pattern="**/*.py").text == "src/main.py\nsrc/pkg/mod.py"


def test_glob_marks_directories(tree: Path, ctx: ToolContext) -> None:
    assert call(GlobTool(), ctx, pattern="src/*").text == "src/main.py\nsrc/pkg/"


def test_glob_includes_skipped_dirs_when_named(tree: Path, ctx: ToolContext) -> None:
    assert call(GlobTool(), ctx, pattern=".venv/*.py").text == ".venv/x.py"


def test_glob_no_match_message(tree: Path, ctx: ToolContext) -> None:
    assert "no files match" in call(GlobTool(), ctx, pattern="*.rs").text


def test_glob_pattern_with_dotdot_is_refused(tree: Path, ctx: ToolContext, outside: Path) -> None:
    assert refused(GlobTool(), ctx, pattern="../outside/*").code == "OUTSIDE_WORKSPACE"
    assert refused(GlobTool(), ctx, pattern="src/../../*").code == "OUTSIDE_WORKSPACE"


def test_glob_absolute_pattern_is_refused(ctx: ToolContext, outside: Path) -> None:
    assert refused(GlobTool(), ctx, pattern=f"{outside}/*").code == "OUTSIDE_WORKSPACE"


def test_glob_drops_results_behind_symlinks_pointing_outside(
    workspace: Path, ctx: ToolContext, outside: Path
) -> None:
    (workspace / "link").symlink_to(outside)
    (workspace / "mine.txt").write_text("")
    assert call(GlobTool(), ctx, pattern="link/*").text.startswith("no files match")
    assert call(GlobTool(), ctx, pattern="*").text == "mine.txt"


def test_glob_caps_results_with_a_note(workspace: Path, ctx: ToolContext) -> None:
    for i in range(1003):
        (workspace / f"f{i:04d}.txt").write_text("")
    lines = call(GlobTool(), ctx, pattern="*.txt").text.splitlines()
    assert len(lines) == 1001
    assert "1000 of 1003" in lines[-1]


# grep


def test_grep_finds_matches_with_path_and_line(tree: Path, ctx: ToolContext) -> None:
    out = call(GrepTool(), ctx, pattern=r"hel+o")
    assert out.text.splitlines() == [
        "src/main.py:2: print('hello world')",
        "src/pkg/mod.py:1: def hello():",
    ]


def test_grep_skips_vcs_dependency_dirs_and_binaries(tree: Path, ctx: ToolContext) -> None:
    out = call(GrepTool(), ctx, pattern="hello")
    assert ".git" not in out.text
    assert "node_modules" not in out.text
    assert ".venv" not in out.text
    assert "img.png" not in out.text


def test_grep_within_a_path(tree: Path, ctx: ToolContext) -> None:
    out = call(GrepTool(), ctx, pattern="(?i)hello", path="README.md")
    assert out.text == "README.md:1: # Hello"


def test_grep_no_matches_is_not_an_error(tree: Path, ctx: ToolContext) -> None:
    out = call(GrepTool(), ctx, pattern="xyzzy")
    assert not out.is_error
    assert "no matches" in out.text


def test_grep_invalid_regex_is_an_error(tree: Path, ctx: ToolContext) -> None:
    err = refused(GrepTool(), ctx, pattern="(unclosed")
    assert err.code == "INVALID_ARGUMENT"
    assert "invalid regular expression" in str(err)


def test_grep_caps_matches_with_a_note(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "many.txt").write_text("match\n" * 600)
    lines = call(GrepTool(), ctx, pattern="match").text.splitlines()
    assert len(lines) == 501
    assert "stopped after 500 matches" in lines[-1]


def test_grep_refuses_path_outside(ctx: ToolContext, outside: Path) -> None:
    assert refused(GrepTool(), ctx, pattern="secret", path="../outside").code == "OUTSIDE_WORKSPACE"


def test_grep_ignores_symlinked_files_pointing_outside(
    workspace: Path, ctx: ToolContext, outside: Path
) -> None:
    (workspace / "s.txt").symlink_to(outside / "secret.txt")
    assert "no matches" in call(GrepTool(), ctx, pattern="secret").text


def test_a_catastrophic_pattern_is_stopped_at_the_deadline_not_run_forever(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``re`` holds the GIL for a whole match: in a thread this froze the whole harness (2**40
    steps); in the worker process it is killed at the deadline."""
    import dsh.tools.search as search

    monkeypatch.setattr(search, "GREP_TIMEOUT", 1.0)
    (workspace / "a.txt").write_text("a" * 40 + "\n")
    err = refused(GrepTool(), ctx, pattern="(a|a)*b")
    assert err.code == "TIMEOUT"
    assert "(a+)+" in str(err)


def test_grep_does_not_import_a_dsh_package_planted_in_the_current_directory(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = workspace / "dsh" / "tools"
    planted.mkdir(parents=True)
    for package in (workspace / "dsh", planted):
        (package / "__init__.py").write_text("")
    (planted / "grep_worker.py").write_text("open('PWNED', 'w').close()\n")
    (workspace / "x.txt").write_text("needle\n")
    monkeypatch.chdir(workspace)
    assert call(GrepTool(), ctx, pattern="needle", path="x.txt").text == "x.txt:1: needle"
    assert not (workspace / "PWNED").exists()


def test_glob_searches_under_a_given_directory_and_names_results_from_the_root(
    tree: Path, ctx: ToolContext
) -> None:
    """Models trained on other harnesses pass ``path`` to glob; it was refused as an unknown
    argument (a real Qwen2.5-Coder 0.5B reply lost every call of its reply to it)."""
    assert call(GlobTool(), ctx, pattern="*.py", path="src").text == "src/main.py"
    assert call(GlobTool(), ctx, pattern="**/*.py", path="src/pkg").text == "src/pkg/mod.py"
    absolute = str(tree / "src")
    assert call(GlobTool(), ctx, pattern="*.py", path=absolute).text == "src/main.py"
    assert call(GlobTool(), ctx, pattern="*.py", path=".venv").text == ".venv/x.py"
    assert call(GlobTool(), ctx, pattern="*.rs", path="src").text == "no files match '*.rs' in src"


def test_glob_path_outside_missing_or_not_a_directory_is_refused(
    tree: Path, ctx: ToolContext, outside: Path
) -> None:
    assert refused(GlobTool(), ctx, pattern="*", path=str(outside)).code == "OUTSIDE_WORKSPACE"
    assert refused(GlobTool(), ctx, pattern="*", path="../").code == "OUTSIDE_WORKSPACE"
    assert refused(GlobTool(), ctx, pattern="*", path="nope").code == "NOT_FOUND"
    assert refused(GlobTool(), ctx, pattern="*", path="README.md").code == "INVALID_ARGUMENT"
