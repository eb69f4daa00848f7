"""``dsh.config.small_file``: a small file a repository or the user controls is read only when
it is a regular file (symlinks followed), never blocking on a FIFO and never reading past its
limit. Each read runs in a thread joined with a timeout, so a regression fails instead of
hanging the suite (an endless read stops at the limit it is given here)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from dsh.config import small_file
from dsh.config.small_file import (
    FileHead,
    UnreadableFile,
    read_file_head,
    read_small_file,
    shown_size,
)

T = TypeVar("T")
JOIN_SECONDS = 60
"""Generous: a read that works returns at once, even on a loaded machine."""


def finished(read: Callable[[], T], fifo: Path | None = None) -> T | UnreadableFile:
    """``read()``'s result (or its ``UnreadableFile``), run in a thread; a read still blocked
    after ``JOIN_SECONDS`` fails the test (and a writer opened on ``fifo`` lets it go)."""
    outcome: list[T | UnreadableFile] = []

    def run() -> None:
        try:
            outcome.append(read())
        except UnreadableFile as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(JOIN_SECONDS)
    if thread.is_alive():
        if fifo is not None:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # its reader gets EOF
        pytest.fail("the read blocked")
    return outcome[0]


def test_a_regular_file_is_read_whole_up_to_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b"x" * 100)
    assert read_small_file(path, 100) == b"x" * 100
    link = tmp_path / "link.toml"
    link.symlink_to(path)  # a symlink to a regular file is followed
    assert read_small_file(link, 100) == b"x" * 100


def test_a_file_over_the_limit_is_refused_saying_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    path.write_bytes(b"x" * 2049)
    with pytest.raises(UnreadableFile) as refused:
        read_small_file(path, 2 * 1024)
    assert refused.value.reason == "2,049 bytes, over the limit of 2 KiB"
    assert str(refused.value) == f"{path}: 2,049 bytes, over the limit of 2 KiB"
    assert not refused.value.missing


def test_a_head_is_cut_at_the_limit_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_bytes(b"abcdef")
    assert read_file_head(path, 4) == FileHead(b"abcd", cut=True)
    assert read_file_head(path, 6) == FileHead(b"abcdef", cut=False)


def test_a_file_that_says_no_size_is_still_read_only_up_to_its_limit() -> None:
    """A /proc file says size 0 and holds more: the read stops at the limit and refuses it."""
    with pytest.raises(UnreadableFile) as refused:
        read_small_file(Path("/proc/self/status"), 10)
    assert refused.value.reason == "over the limit of 10 bytes"


@pytest.mark.parametrize("limit", [1024, small_file.MIB])
def test_a_symlink_to_dev_zero_is_refused_not_read(tmp_path: Path, limit: int) -> None:
    path = tmp_path / "config.toml"
    path.symlink_to("/dev/zero")
    refused = finished(lambda: read_small_file(path, limit))
    assert isinstance(refused, UnreadableFile)
    assert refused.reason == "a character device, not a regular file"
    head = finished(lambda: read_file_head(path, limit))
    assert isinstance(head, UnreadableFile)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "HEAD"
    os.mkfifo(path)
    refused = finished(lambda: read_small_file(path, 4096), fifo=path)
    assert isinstance(refused, UnreadableFile)
    assert refused.reason == "a FIFO, not a regular file"


def test_a_fifo_swapped_in_after_the_look_is_caught_by_what_was_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look before the open saw a regular file; the open (non-blocking) and its fstat see
    the FIFO that replaced it."""
    regular = tmp_path / "regular"
    regular.write_text("ref: refs/heads/main\n")
    path = tmp_path / "HEAD"
    os.mkfifo(path)
    looked = os.stat(regular)

    class LookSeesRegular:  # the module's ``os``, but its look at any path sees ``regular``
        def __getattr__(self, name: str) -> object:
            return getattr(os, name)

        def stat(self, _path: object) -> os.stat_result:
            return looked

    monkeypatch.setattr(small_file, "os", LookSeesRegular())
    refused = finished(lambda: read_small_file(path, 4096), fifo=path)
    assert isinstance(refused, UnreadableFile)
    assert refused.reason == "a FIFO, not a regular file"


def test_a_directory_and_a_missing_file_are_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile) as directory:
        read_small_file(tmp_path, 4096)
    assert directory.value.reason == "Is a directory" and not directory.value.missing
    with pytest.raises(UnreadableFile) as missing:
        read_small_file(tmp_path / "none", 4096)
    assert missing.value.reason == "No such file or directory" and missing.value.missing
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "none")
    with pytest.raises(UnreadableFile) as gone:
        read_small_file(dangling, 4096)
    assert gone.value.missing


def test_limits_are_said_in_round_units() -> None:
    assert shown_size(small_file.MIB) == "1 MiB"
    assert shown_size(8 * 1024) == "8 KiB"
    assert shown_size(64_000) == "64,000 bytes"


# ``within``: a project's file dsh reads into the model's context must lie in the workspace.

MARKER = b"sk-OUTSIDE_MARKER_0123456789"


@pytest.fixture
def workspace_and_outside(tmp_path: Path) -> tuple[Path, Path]:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "AGENTS.md").write_bytes(MARKER)
    return workspace, outside


def test_a_file_resolving_outside_within_is_refused_without_naming_where(
    workspace_and_outside: tuple[Path, Path],
) -> None:
    workspace, outside = workspace_and_outside
    path = workspace / "AGENTS.md"
    path.symlink_to(outside / "AGENTS.md")
    for read in (read_small_file, read_file_head):
        with pytest.raises(UnreadableFile) as refused:
            read(path, 4096, within=workspace)
        assert refused.value.reason == small_file.OUTSIDE and not refused.value.missing
        assert str(outside) not in str(refused.value)
    assert read_small_file(path, 4096) == MARKER  # without ``within``: your own files


def test_a_symlink_to_the_workspace_itself_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").symlink_to(".")
    with pytest.raises(UnreadableFile) as refused:
        read_small_file(tmp_path / "AGENTS.md", 4096, within=tmp_path)
    assert refused.value.reason == "Is a directory"


class _ResolvedBeforeTheSwap:
    """The module's ``os``, but ``path.realpath`` answers for ``swapped`` as it did before a
    symlink was put on its way: the path resolved, then swapped, then opened."""

    def __init__(self, swapped: Path) -> None:
        real_path = os.path

        class Path_:
            def __getattr__(self, name: str) -> object:
                return getattr(real_path, name)

            def realpath(self, path: object) -> str:
                return str(path) if str(path) == str(swapped) else real_path.realpath(path)

        self.path = Path_()

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)


@pytest.mark.parametrize("swapped", ["directory", "file"])
def test_a_symlink_swapped_in_after_resolving_is_not_followed_out(
    workspace_and_outside: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, swapped: str
) -> None:
    """Resolved while ``sub`` (or the file) was inside; a symlink out put there before the
    open: the read goes through the resolved path one name at a time without following it."""
    workspace, outside = workspace_and_outside
    if swapped == "directory":
        (workspace / "sub").symlink_to(outside)
        path = workspace / "sub" / "AGENTS.md"
    else:
        path = workspace / "AGENTS.md"
        path.symlink_to(outside / "AGENTS.md")
    monkeypatch.setattr(small_file, "os", _ResolvedBeforeTheSwap(path))
    refused = finished(lambda: read_small_file(path, 4096, within=workspace))
    assert isinstance(refused, UnreadableFile), refused  # not the bytes outside
    if swapped == "directory":  # O_DIRECTORY | O_NOFOLLOW on a symlink: ENOTDIR on Linux
        assert refused.reason in ("Not a directory", "Too many levels of symbolic links")
    else:
        assert refused.reason == "a symlink, not a regular file"
