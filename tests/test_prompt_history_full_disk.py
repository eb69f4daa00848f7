"""A prompt history line cut short — a full disk, a crash mid-write — never swallows the prompt
written after it: a failed write is taken back, and an unended line is ended first."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from dsh.config import prompt_history as prompt_history_module
from dsh.config.prompt_history import FILE_NAME, PromptHistory, entry_line


class FullDisk:
    """``os.write`` on the history file as a disk with ``room`` bytes left: the write that
    reaches the end writes what fits, the next one fails with ENOSPC (Linux's way)."""

    def __init__(self, path: Path, room: int) -> None:
        self.path, self.room, self.full = path, room, True
        self._write = os.write

    def __call__(self, fd: int, data: Any) -> int:
        if not self.full or os.readlink(f"/proc/self/fd/{fd}") != str(self.path):
            return self._write(fd, data)
        if self.room == 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = self._write(fd, bytes(data)[: self.room])
        self.room -= written
        return written


def test_a_line_cut_by_a_full_disk_does_not_swallow_the_next_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / FILE_NAME
    history = PromptHistory(tmp_path)
    history.append("first")
    history.append("second")
    before = path.read_bytes()
    disk = FullDisk(path, room=10)
    monkeypatch.setattr(prompt_history_module.os, "write", disk)
    history.append("the prompt the disk had no room for " + "x" * 300)
    assert path.read_bytes() == before  # taken back whole, not left torn
    assert any("Could not write the prompt history" in r.getMessage() for r in caplog.records)
    disk.full = False  # space came back
    history.append("the prompt after space came back")
    assert PromptHistory(tmp_path).load() == ["first", "second", "the prompt after space came back"]


def test_a_line_a_crash_left_unended_is_ended_before_the_next_prompt(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    path.write_bytes(entry_line("first", 1) + entry_line("torn by a crash", 2)[:-9])
    history = PromptHistory(tmp_path)
    history.append("the next prompt")
    assert PromptHistory(tmp_path).load() == ["first", "the next prompt"]
