from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from dsh.errors import ToolError
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.diffs import (
    MAX_DIFF_CHARS,
    MAX_DIFF_LINES,
    NO_NEWLINE,
    read_small_text,
    unified_diff,
)
from dsh.tools.files import EditFileTool, ListDirTool, ReadFileTool, WriteFileTool
from dsh.tools.planned_change import planned_change, planned_diff


def call(tool: Any, ctx: ToolContext, **args: Any) -> ToolOutput:
    result: ToolOutput = asyncio.run(tool.run(args, ctx))
    return result


def refused(tool: Any, ctx: ToolContext, **args: Any) -> ToolError:
    with pytest.raises(ToolError) as err:
        call(tool, ctx, **args)
    return err.value


# read_file


def test_read_file_numbers_lines_from_one(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    out = call(ReadFileTool(), ctx, path="a.txt")
    assert out.text == "1\talpha\n2\tbeta"
    assert not out.is_error


def test_read_file_with_offset_and_limit_says_how_to_read_more(
    workspace: Path, ctx: ToolContext
) -> None:
    (workspace / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = call(ReadFileTool(), ctx, path="n.txt", offset=3, limit=4)
    lines = out.text.splitlines()
    assert lines[:4] == ["3\tline 3", "4\tline 4", "5\tline 5", "6\tline 6"]
    assert "(lines 3–6 of 10" in lines[4]
    assert "offset=7" in lines[4]


def test_read_file_tail_window_reports_range_without_more(
    workspace: Path, ctx: ToolContext
) -> None:
    (workspace / "n.txt").write_text("a\nb\nc\n")
    out = call(ReadFileTool(), ctx, path="n.txt", offset=2)
    assert out.text == "2\tb\n3\tc\n(lines 2–3 of 3)"


def test_read_file_default_limit_is_2000_lines(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "big.txt").write_text("x\n" * 2500)
    out = call(ReadFileTool(), ctx, path="big.txt")
    assert out.text.splitlines()[-2] == "2000\tx"
    assert "(lines 1–2000 of 2500" in out.text


def test_read_file_offset_past_end_is_an_error(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "a.txt").write_text("one\n")
    err = refused(ReadFileTool(), ctx, path="a.txt", offset=5)
    assert "past the end" in str(err)


def test_read_file_refuses_binary_files(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "b.bin").write_bytes(b"\x00\x01\x02binary")
    err = refused(ReadFileTool(), ctx, path="b.bin")
    assert err.code == "BINARY_FILE"
    assert "binary" in str(err)


def test_read_file_refuses_directories(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "d").mkdir()
    err = refused(ReadFileTool(), ctx, path="d")
    assert err.code == "IS_DIRECTORY"
    assert "list_dir" in str(err)


def test_read_file_missing_file_is_not_found(ctx: ToolContext) -> None:
    assert refused(ReadFileTool(), ctx, path="nope.txt").code == "NOT_FOUND"


def test_read_file_refuses_dotdot_escape(ctx: ToolContext, outside: Path) -> None:
    assert refused(ReadFileTool(), ctx, path="../outside/secret.txt").code == "OUTSIDE_WORKSPACE"


def test_read_file_refuses_absolute_path_outside(ctx: ToolContext, outside: Path) -> None:
    err = refused(ReadFileTool(), ctx, path=str(outside / "secret.txt"))
    assert err.code == "OUTSIDE_WORKSPACE"


def test_read_file_refuses_symlink_pointing_outside(
    workspace: Path, ctx: ToolContext, outside: Path
) -> None:
    (workspace / "s.txt").symlink_to(outside / "secret.txt")
    assert refused(ReadFileTool(), ctx, path="s.txt").code == "OUTSIDE_WORKSPACE"


def test_read_file_never_holds_a_huge_line_in_memory(workspace: Path, ctx: ToolContext) -> None:
    import tracemalloc

    size = 20_000_000
    with (workspace / "one-line.txt").open("w") as fh:
        for _ in range(size // 100_000):
            fh.write("x" * 100_000)
        fh.write("\nsecond\r\nthird\rfourth")
    tracemalloc.start()
    try:
        text = call(ReadFileTool(), ctx, path="one-line.txt").text
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < size // 4
    first, *rest = text.split("\n")
    assert first == f"1\t{'x' * 2000}… [{size - 2000} characters omitted]"
    assert rest == ["2\tsecond", "3\tthird", "4\tfourth"]


@pytest.mark.parametrize("length", [1999, 2000, 2001, 2002, 2003])
@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r", ""])
def test_read_file_cuts_only_lines_over_the_limit(
    length: int, ending: str, workspace: Path, ctx: ToolContext
) -> None:
    """Around the cut, with each line ending and none (the file's end)."""
    (workspace / "l.txt").write_bytes(("y" * length + ending + "next" * bool(ending)).encode())
    first, *rest = call(ReadFileTool(), ctx, path="l.txt").text.split("\n")
    if length <= 2000:
        assert first == f"1\t{'y' * length}"
    else:
        assert first == f"1\t{'y' * 2000}… [{length - 2000} characters omitted]"
    assert rest == (["2\tnext"] if ending else [])


# write_file


def test_write_file_creates_parents_and_reports_bytes(workspace: Path, ctx: ToolContext) -> None:
    out = call(WriteFileTool(), ctx, path="deep/er/f.txt", content="héllo\n")
    assert (workspace / "deep/er/f.txt").read_text(encoding="utf-8") == "héllo\n"
    assert "wrote 7 bytes to deep/er/f.txt" in out.text


def test_write_file_overwrites_existing(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "f.txt").write_text("old")
    out = call(WriteFileTool(), ctx, path="f.txt", content="new")
    assert (workspace / "f.txt").read_text() == "new"
    assert "overwrote" in out.text


def test_write_file_refuses_symlink_pointing_outside(
    workspace: Path, ctx: ToolContext, outside: Path
) -> None:
    (workspace / "s.txt").symlink_to(outside / "secret.txt")
    assert refused(WriteFileTool(), ctx, path="s.txt", content="pwned").code == "OUTSIDE_WORKSPACE"
    assert (outside / "secret.txt").read_text() == "top secret\n"


def test_write_file_refuses_through_symlinked_dir_outside(
    workspace: Path, ctx: ToolContext, outside: Path
) -> None:
    (workspace / "out").symlink_to(outside)
    err = refused(WriteFileTool(), ctx, path="out/new.txt", content="x")
    assert err.code == "OUTSIDE_WORKSPACE"
    assert not (outside / "new.txt").exists()


def test_write_file_refuses_dotdot_escape(ctx: ToolContext, tmp_path: Path) -> None:
    err = refused(WriteFileTool(), ctx, path="../escaped.txt", content="x")
    assert err.code == "OUTSIDE_WORKSPACE"
    assert not (tmp_path / "escaped.txt").exists()


def test_write_file_refuses_a_fifo_with_a_reader_and_writes_nothing_into_it(
    workspace: Path, ctx: ToolContext
) -> None:
    os.mkfifo(workspace / "pipe")
    reader = os.open(workspace / "pipe", os.O_RDONLY | os.O_NONBLOCK)
    try:
        err = refused(WriteFileTool(), ctx, path="pipe", content="into the pipe")
        assert err.code == "NOT_A_FILE"
        assert os.read(reader, 100) == b""  # nothing was written into the pipe
    finally:
        os.close(reader)


def test_write_file_refuses_a_fifo_without_a_reader_instead_of_blocking(
    workspace: Path, ctx: ToolContext
) -> None:
    os.mkfifo(workspace / "pipe")
    assert refused(WriteFileTool(), ctx, path="pipe", content="x").code == "NOT_A_FILE"


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
def test_a_symlink_swapped_in_after_the_check_is_not_followed(
    tool: str, workspace: Path, ctx: ToolContext, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is replaced by a symlink leading out between resolving and writing."""
    import dsh.tools.files as files_module

    real_resolve = files_module.resolve_in_workspace

    def resolve_then_swap(path: str, root: Path, **kwargs: Any) -> Path:
        resolved = real_resolve(path, root, **kwargs)
        resolved.unlink()
        resolved.symlink_to(outside / "secret.txt")
        return resolved

    (workspace / "f.txt").write_text("top\n")
    monkeypatch.setattr(files_module, "resolve_in_workspace", resolve_then_swap)
    monkeypatch.setattr(files_module, "_check_regular_file", lambda path, shown: None)
    if tool == "write_file":
        err = refused(WriteFileTool(), ctx, path="f.txt", content="pwned")
    else:
        err = refused(EditFileTool(), ctx, path="f.txt", old="top", new="pwned")
    assert err.code == "NOT_A_FILE"
    assert (outside / "secret.txt").read_text() == "top secret\n"


# edit_file


def test_edit_file_replaces_unique_occurrence(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "c.py").write_text("a = 1\nb = 2\nc = 3\n")
    out = call(EditFileTool(), ctx, path="c.py", old="b = 2", new="b = 20")
    assert (workspace / "c.py").read_text() == "a = 1\nb = 20\nc = 3\n"
    assert "line 2" in out.text


def test_edit_file_logs_the_real_diff_for_people(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    out = call(EditFileTool(), ctx, path="calc.py", old="return a - b", new="return a + b")
    assert "(line 2)" in out.text
    assert out.meta is not None
    assert {"diff": out.meta["diff"]} == {
        "diff": [
            "--- a/calc.py",
            "+++ b/calc.py",
            "@@ -1,2 +1,2 @@",
            " def add(a, b):",
            "-    return a - b",
            "+    return a + b",
        ]
    }


def test_edit_file_preserves_crlf_line_endings(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    call(EditFileTool(), ctx, path="w.txt", old="two", new="2")
    assert (workspace / "w.txt").read_bytes() == b"one\r\n2\r\n"


def test_edit_file_old_not_found(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "c.py").write_text("a = 1\n")
    err = refused(EditFileTool(), ctx, path="c.py", old="zzz", new="y")
    assert "not found" in str(err)
    assert (workspace / "c.py").read_text() == "a = 1\n"


def test_edit_file_old_not_unique(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "c.py").write_text("x\nx\nx\n")
    err = refused(EditFileTool(), ctx, path="c.py", old="x", new="y")
    assert "found 3 times in c.py — give more context so it is unique" in str(err)
    assert (workspace / "c.py").read_text() == "x\nx\nx\n"


def test_edit_file_old_equal_to_new_is_refused(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "c.py").write_text("x\n")
    err = refused(EditFileTool(), ctx, path="c.py", old="x", new="x")
    assert "identical" in str(err)


def test_edit_file_refuses_symlink_pointing_outside(
    workspace: Path, ctx: ToolContext, outside: Path
) -> None:
    (workspace / "s.txt").symlink_to(outside / "secret.txt")
    err = refused(EditFileTool(), ctx, path="s.txt", old="top", new="no")
    assert err.code == "OUTSIDE_WORKSPACE"
    assert (outside / "secret.txt").read_text() == "top secret\n"


# list_dir


def test_list_dir_sorted_with_directory_slashes(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "b.txt").write_text("")
    (workspace / "a").mkdir()
    (workspace / "c.txt").write_text("")
    assert call(ListDirTool(), ctx).text == "a/\nb.txt\nc.txt"


def test_list_dir_of_subdirectory(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "x").write_text("")
    assert call(ListDirTool(), ctx, path="sub").text == "x"


def test_list_dir_caps_entries_with_a_note(workspace: Path, ctx: ToolContext) -> None:
    for i in range(1005):
        (workspace / f"f{i:04d}").write_text("")
    lines = call(ListDirTool(), ctx).text.splitlines()
    assert len(lines) == 1001
    assert "1000 of 1005" in lines[-1]


def test_list_dir_refuses_outside(ctx: ToolContext, outside: Path) -> None:
    assert refused(ListDirTool(), ctx, path="..").code == "OUTSIDE_WORKSPACE"


def test_write_file_over_a_text_file_logs_the_real_diff_and_a_new_file_none(
    workspace: Path, ctx: ToolContext
) -> None:
    """An overwrite is not all new lines: the card shows what changed, as for edit_file."""
    (workspace / "notes.txt").write_text("one\ntwo\nthree\n")
    out = call(WriteFileTool(), ctx, path="notes.txt", content="one\n2\nthree\n")
    assert out.meta is not None
    assert {"diff": out.meta["diff"]} == {
        "diff": [
            "--- a/notes.txt",
            "+++ b/notes.txt",
            "@@ -1,3 +1,3 @@",
            " one",
            "-two",
            "+2",
            " three",
        ]
    }
    created = call(WriteFileTool(), ctx, path="new.txt", content="fresh\n")
    assert created.meta is not None and "diff" not in created.meta
    assert "(created)" in created.text
    (workspace / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    blob = call(WriteFileTool(), ctx, path="blob.bin", content="text\n").meta
    assert blob is not None and "diff" not in blob


def test_a_file_too_large_to_diff_logs_no_diff(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "big.txt").write_text("x\n" * (MAX_DIFF_CHARS // 2) + "marker\n")
    out = call(EditFileTool(), ctx, path="big.txt", old="marker", new="done")
    assert not out.is_error and out.meta is not None and "diff" not in out.meta


def test_a_file_too_large_to_diff_is_never_read_for_a_diff(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An approval reads the file before anyone approved anything: a huge file is judged by
    its size, not loaded to be left out."""
    huge = workspace / "huge.log"
    huge.write_bytes(b"a" * (MAX_DIFF_CHARS * 4) + b"\n")  # text, one byte over the bound
    read: list[Path] = []
    real = Path.read_bytes

    def spy(self: Path) -> bytes:
        read.append(self)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", spy)
    assert read_small_text(huge) is None and read == []
    over = planned_change("write_file", {"path": "huge.log", "content": "x"}, workspace)
    assert over is not None and over.lines is not None and "+x" in over.lines
    assert (
        over.note == "replaces huge.log (1,048,577 bytes, not shown: too large) with this content"
    )
    edit = planned_change("edit_file", {"path": "huge.log", "old": "a", "new": "b"}, workspace)
    assert edit is not None and edit.fails is None and edit.lines is not None
    assert edit.note == "huge.log is too large to show here: the diff is of the call's old and new"
    assert read == []


def test_planning_a_diff_never_blocks_or_fails_on_odd_paths(workspace: Path) -> None:
    """Before approval, on the UI thread: a FIFO is not read (it would block), a NUL byte in
    the model's path is not an exception (it crashed the TUI), CRLF is kept as stored. The
    edit tool refuses the first two, and the approval says so."""
    os.mkfifo(workspace / "pipe")
    edit = {"path": "pipe", "old": "a", "new": "b"}
    piped = planned_change("edit_file", edit, workspace)
    assert piped is not None and piped.fails == "pipe is not a regular file"
    assert piped.lines is None
    nul = {"path": "a\x00b", "old": "a", "new": "b"}
    named = planned_change("edit_file", nul, workspace)
    assert named is not None and named.fails == "invalid path 'a\\x00b'" and named.lines is None
    (workspace / "c.txt").write_bytes(b"one\r\ntwo\r\n")
    lines = planned_diff("write_file", {"path": "c.txt", "content": "one\ntwo\n"}, workspace)
    assert lines is not None and "-one\r" in lines and "+one" in lines  # not "no change"


def test_diff_lines_split_at_newlines_only_and_many_lines_are_not_diffed() -> None:
    lines = unified_diff("f", "a\x0cb\nc\n", "a\x0cb\nC\n")
    assert lines is not None and "@@ -1,2 +1,2 @@" in lines  # a form feed ends no line
    many = "x\n" * (MAX_DIFF_LINES + 1)
    assert unified_diff("f", many, many + "y\n") is None


def test_a_diff_marks_a_last_line_without_a_newline_as_git_does() -> None:
    """A side that ends without a final newline gets ``\\ No newline at end of file`` under
    its last line, so adding or dropping only the final newline reads as that change."""
    assert unified_diff("f", "a\nb", "a\nb\n") == [
        "--- a/f",
        "+++ b/f",
        "@@ -1,2 +1,2 @@",
        " a",
        "-b",
        NO_NEWLINE,
        "+b",
    ]
    lines = unified_diff("f", "x\ny", "x\nz")
    assert lines is not None and lines[-4:] == ["-y", NO_NEWLINE, "+z", NO_NEWLINE]
    context = unified_diff("f", "a\nb\nc", "A\nb\nc")
    assert context is not None and context[-2:] == [" c", NO_NEWLINE]
    assert NO_NEWLINE not in (unified_diff("f", "a\n", "b\n") or [])


def test_a_fifo_swapped_in_after_the_look_is_not_read_for_a_diff(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The diff's read (before approval, on the UI thread) looks, then opens: a FIFO put in
    the file's place between the two is caught by what was opened, not waited on."""
    import threading

    (workspace / "a.txt").write_text("one\n")
    looked = os.stat(workspace / "a.txt")
    pipe = workspace / "pipe"
    os.mkfifo(pipe)
    real_stat = os.stat

    def look(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:  # pipe's look: a.txt
        return looked if os.fspath(path) == os.fspath(pipe) else real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", look)
    text: list[str | None] = []
    thread = threading.Thread(target=lambda: text.append(read_small_text(pipe)), daemon=True)
    thread.start()
    thread.join(60)
    if thread.is_alive():
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))  # let it go
        pytest.fail("the diff's read blocked on a FIFO")
    assert text == [None]
