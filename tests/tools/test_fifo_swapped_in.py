"""A FIFO swapped in for a file after the tools looked at its path never blocks them.

A file tool looks at a path (is it a regular file?) and then opens it; a repository's script or
another process can put a FIFO there in between, and opening a FIFO for reading waits for a
writer forever. Each test makes the look see a regular file (``Path.is_file`` answers True, as
it did before the swap) while a FIFO is what the open finds: the tool must refuse it from what
it opened, not hang. A tool that does hang is let go by opening the FIFO's other end, and the
test fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.config.small_file import UnreadableFile, open_regular_file
from dsh.errors import ToolError
from dsh.tools.base import ToolContext
from dsh.tools.files import EditFileTool, read_window
from dsh.tools.planned_change import planned_change
from dsh.tools.search import grep_text
from dsh.tools.secrets import SecretPolicy

HANG_LIMIT_S = 60.0
"""How long a call may take before it counts as blocked (a refusal takes microseconds)."""


def outcome_of(call: Callable[[], Any], fifo: Path) -> Any:
    """``call``'s result, or the exception it raised; fails the test when it blocks."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_LIMIT_S)
    if worker.is_alive():
        while worker.is_alive():  # release each blocked open (a tool may open it again)
            with contextlib.suppress(OSError):  # ENXIO: no open waiting right now
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            worker.join(0.05)
        pytest.fail("the tool blocked opening a FIFO")
    return box.get("error", box.get("result"))


@pytest.fixture
def fifo(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``workspace/notes.txt``, a FIFO that every ``Path.is_file`` look calls a regular file."""
    path = workspace / "notes.txt"
    os.mkfifo(path)
    real_is_file = Path.is_file
    monkeypatch.setattr(Path, "is_file", lambda self: self == path or real_is_file(self))
    return path


def test_read_file_refuses_a_fifo_swapped_in_after_the_look(fifo: Path, workspace: Path) -> None:
    got = outcome_of(lambda: read_window("notes.txt", workspace, 1, 10, SecretPolicy()), fifo)
    assert isinstance(got, ToolError) and got.code == "NOT_A_FILE"


def test_edit_file_refuses_a_fifo_swapped_in_after_the_look(fifo: Path, ctx: ToolContext) -> None:
    args = {"path": "notes.txt", "old": "a", "new": "b"}
    got = outcome_of(lambda: asyncio.run(EditFileTool().run(args, ctx)), fifo)
    assert isinstance(got, ToolError) and got.code == "NOT_A_FILE"


def test_the_approval_diff_of_an_edit_fails_on_a_fifo_instead_of_blocking(
    fifo: Path, workspace: Path
) -> None:
    args = {"path": "notes.txt", "old": "a", "new": "b"}
    got = outcome_of(lambda: planned_change("edit_file", args, workspace), fifo)
    assert got is not None and got.fails is not None and "not a regular file" in got.fails


def test_grep_of_the_fifo_itself_refuses_it(fifo: Path, workspace: Path) -> None:
    regex = re.compile("x")
    got = outcome_of(lambda: grep_text(regex, "notes.txt", workspace, SecretPolicy()), fifo)
    assert isinstance(got, ToolError) and got.code == "NOT_A_FILE"


def test_grep_of_a_directory_skips_a_fifo_in_it(fifo: Path, workspace: Path) -> None:
    (workspace / "real.txt").write_text("x marks the spot\n")
    regex = re.compile("x")
    got = outcome_of(lambda: grep_text(regex, ".", workspace, SecretPolicy()), fifo)
    assert got == "real.txt:1: x marks the spot"


def test_open_regular_file_reads_a_regular_file_whole_and_blocking(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"y" * 200_000)
    with open_regular_file(path) as fh:
        assert os.get_blocking(fh.fileno())
        assert fh.read() == b"y" * 200_000


def test_open_regular_file_refuses_what_it_opened_when_not_regular(tmp_path: Path) -> None:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    got = outcome_of(lambda: open_regular_file(path).close(), path)
    assert isinstance(got, UnreadableFile) and got.reason == "a FIFO, not a regular file"
    with pytest.raises(FileNotFoundError):
        open_regular_file(tmp_path / "missing")
