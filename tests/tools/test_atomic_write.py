"""``write_file`` and ``edit_file`` write a file whole or not at all (``dsh.tools.atomic_write``):
the new bytes go to a temporary file beside it, fsynced, given the old file's mode, owner and
group, renamed over it, and the directory fsynced. A failure at any step leaves the original
and no temporary file; something other than a regular file swapped in before the rename is
refused and left; a hard-linked file is parted from its other names, which keep the old bytes;
leftovers of a killed earlier process are removed by the next write of the same file."""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import dsh.tools.atomic_write as atomic_write
from dsh.errors import ToolError
from dsh.tools.atomic_write import TEMP_MARK, temp_prefix, write_regular_file
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.files import EditFileTool, ListDirTool, WriteFileTool
from dsh.tools.search import GlobTool, GrepTool

ROOT = os.geteuid() == 0


def call(tool: Any, ctx: ToolContext, **args: Any) -> ToolOutput:
    result: ToolOutput = asyncio.run(tool.run(args, ctx))
    return result


def refused(tool: Any, ctx: ToolContext, **args: Any) -> ToolError:
    with pytest.raises(ToolError) as err:
        call(tool, ctx, **args)
    return err.value


def change(tool: str, ctx: ToolContext, name: str = "f.txt") -> ToolOutput:
    """Change ``name`` (which holds ``old line``) with the named tool."""
    if tool == "write_file":
        return call(WriteFileTool(), ctx, path=name, content="new line\n")
    return call(EditFileTool(), ctx, path=name, old="old", new="new")


def refused_change(tool: str, ctx: ToolContext, name: str = "f.txt") -> ToolError:
    with pytest.raises(ToolError) as err:
        change(tool, ctx, name)
    return err.value


def names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def on_regular_files(real: Callable[..., Any], fake: Callable[..., Any]) -> Callable[..., Any]:
    """``fake`` for a call on a regular file's descriptor, ``real`` for any other (the event
    loop's own pipes)."""

    def call(fd: int, *args: Any) -> Any:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fake(fd, *args)
        return real(fd, *args)

    return call


TOOLS = pytest.mark.parametrize("tool", ["write_file", "edit_file"])


# A failure at any step


def _full_disk_halfway(real_write: Callable[[int, Any], int]) -> Callable[[int, Any], int]:
    def write(fd: int, data: Any) -> int:
        if len(data) > 1:
            return real_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return write


def _failing(code: int) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(code, os.strerror(code))

    return fail


@TOOLS
@pytest.mark.parametrize("step", ["write", "fsync", "replace"])
def test_a_write_failing_midway_leaves_the_original_and_no_temporary_file(
    tool: str, step: str, workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = "old line\n" + "unchanged line\n" * 1000
    (workspace / "f.txt").write_text(before)
    if step == "write":  # the disk fills up half way through the new bytes
        monkeypatch.setattr(os, "write", on_regular_files(os.write, _full_disk_halfway(os.write)))
    elif step == "fsync":
        monkeypatch.setattr(os, "fsync", on_regular_files(os.fsync, _failing(errno.EIO)))
    else:
        monkeypatch.setattr(os, "replace", _failing(errno.EXDEV))
    err = refused_change(tool, ctx)
    assert err.code == "IO_ERROR"
    assert "f.txt" in str(err) and TEMP_MARK not in str(err)  # named as the model gave it
    assert (workspace / "f.txt").read_text() == before
    assert names(workspace) == ["f.txt"]


def test_a_new_file_that_fails_is_not_created(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "replace", _failing(errno.EIO))
    assert refused(WriteFileTool(), ctx, path="n.txt", content="x").code == "IO_ERROR"
    assert names(workspace) == []


# Mode, owner and group


@TOOLS
@pytest.mark.parametrize("mode", [0o755, 0o600, 0o640, 0o444])
def test_the_file_keeps_its_permission_bits(
    tool: str, mode: int, workspace: Path, ctx: ToolContext
) -> None:
    """An executable script stays executable, a private file private."""
    script = workspace / "f.txt"
    script.write_text("old line\n")
    script.chmod(mode)
    replaced = os.stat(script).st_ino
    change(tool, ctx)
    assert stat.S_IMODE(os.stat(script).st_mode) == mode
    assert script.read_text() == "new line\n"
    assert os.stat(script).st_ino != replaced  # a new file, renamed over the old one


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_new_file_gets_the_default_mode_less_the_umask(
    umask: int, workspace: Path, ctx: ToolContext
) -> None:
    old = os.umask(umask)
    try:
        call(WriteFileTool(), ctx, path="new.txt", content="x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(workspace / "new.txt").st_mode) == 0o666 & ~umask


@pytest.mark.skipif(not ROOT, reason="giving a file to another user needs root")
def test_the_file_keeps_its_owner_and_group(workspace: Path, ctx: ToolContext) -> None:
    target = workspace / "f.txt"
    target.write_text("old line\n")
    os.chown(target, 12345, 23456)
    target.chmod(0o2755)  # set-group-ID, kept when the group is carried over
    change("edit_file", ctx)
    info = os.stat(target)
    assert (info.st_uid, info.st_gid) == (12345, 23456)
    assert stat.S_IMODE(info.st_mode) == 0o2755


@pytest.mark.skipif(not ROOT, reason="giving a file to another user needs root")
def test_an_owner_the_process_may_not_give_is_left_and_set_id_bits_are_dropped(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that may not give files away (EPERM) makes the file its own, as a new file
    would be, tries the group alone, and carries no set-user-ID bit over to it (a write by
    another user clears it too)."""
    target = workspace / "f.txt"
    target.write_text("old line\n")
    os.chown(target, 12345, 23456)
    os.chmod(target, 0o4755)
    tried: list[tuple[int, int]] = []

    def fchown(fd: int, uid: int, gid: int) -> None:
        tried.append((uid, gid))
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(os, "fchown", fchown)
    change("write_file", ctx)
    assert tried == [(12345, 23456), (-1, 23456)]
    info = os.stat(target)
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.geteuid(), 0o755)
    assert target.read_text() == "new line\n"


# Something other than a regular file at the path


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def _swap_when_the_temp_is_synced(
    monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]
) -> None:
    """Run ``swap`` after the new bytes are written, before the rename."""
    real = os.fsync

    def fsync(fd: int) -> None:
        if TEMP_MARK in _fd_path(fd):
            swap()
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@TOOLS
@pytest.mark.parametrize("swapped_in", ["symlink", "fifo"])
def test_something_swapped_in_before_the_rename_is_refused_and_left(
    tool: str,
    swapped_in: str,
    workspace: Path,
    outside: Path,
    ctx: ToolContext,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = workspace / "f.txt"
    target.write_text("old line\n")

    def swap() -> None:
        target.unlink()
        if swapped_in == "symlink":
            target.symlink_to(outside / "secret.txt")
        else:
            os.mkfifo(target)

    _swap_when_the_temp_is_synced(monkeypatch, swap)
    assert refused_change(tool, ctx).code == "NOT_A_FILE"
    assert names(workspace) == ["f.txt"]  # no temporary file left
    if swapped_in == "symlink":
        assert target.is_symlink()
    else:
        assert stat.S_ISFIFO(os.lstat(target).st_mode)
    assert (outside / "secret.txt").read_text() == "top secret\n"


def test_a_symlink_swapped_in_after_the_last_check_is_replaced_never_written_through(
    workspace: Path, outside: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the docstring admits: between the last check and the rename, a symlink put at
    the path is replaced by the new file; what it points to is not touched."""
    target = workspace / "f.txt"
    target.write_text("old line\n")
    real = os.replace

    def replace(src: Any, dst: Any, **kwargs: Any) -> None:
        target.unlink()
        target.symlink_to(outside / "secret.txt")
        real(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    change("write_file", ctx)
    assert not target.is_symlink() and target.read_text() == "new line\n"
    assert (outside / "secret.txt").read_text() == "top secret\n"


@TOOLS
def test_a_directory_swapped_for_a_symlink_after_the_path_resolved_fails_the_write(
    tool: str, workspace: Path, outside: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's directory is opened one name at a time from the workspace without following
    a symlink, so a swap between the confinement check and the write cannot lead it out."""
    import dsh.tools.files as files

    (workspace / "sub").mkdir()
    (workspace / "sub" / "f.txt").write_text("old line\n")
    (outside / "f.txt").write_text("old line\n")
    real = files.write_regular_file

    def swapped_first(path: Path, data: bytes, shown: str, **kwargs: Any) -> int:
        os.rename(workspace / "sub", workspace / "sub.real")
        (workspace / "sub").symlink_to(outside)
        return real(path, data, shown, **kwargs)

    monkeypatch.setattr(files, "write_regular_file", swapped_first)
    err = refused_change(tool, ctx, "sub/f.txt")
    assert err.code == "OUTSIDE_WORKSPACE"
    assert str(err).startswith("sub/f.txt: a directory on its way is no longer a directory")
    assert (outside / "f.txt").read_text() == "old line\n"
    assert names(outside) == ["f.txt", "secret.txt"]


@TOOLS
@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_a_non_regular_file_is_refused_before_anything_is_written(
    tool: str, kind: str, workspace: Path, outside: Path, ctx: ToolContext
) -> None:
    """Through the writer itself, past the tools' own checks: nothing made beside it."""
    target = workspace / "f.txt"
    if kind == "symlink":
        target.symlink_to(outside / "secret.txt")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    with pytest.raises(ToolError) as err:
        atomic_write.write_regular_file(target, b"x", "f.txt")
    assert err.value.code == "NOT_A_FILE"
    assert names(workspace) == ["f.txt"]
    assert (outside / "secret.txt").read_text() == "top secret\n"


# Hard links


@TOOLS
def test_a_hard_linked_file_is_parted_from_its_other_names_which_keep_the_old_bytes(
    tool: str, workspace: Path, ctx: ToolContext
) -> None:
    (workspace / "f.txt").write_text("old line\n")
    os.link(workspace / "f.txt", workspace / "store-copy.txt")
    out = change(tool, ctx)
    assert (workspace / "f.txt").read_text() == "new line\n"
    assert (workspace / "store-copy.txt").read_text() == "old line\n"
    assert out.text.endswith("; it had 1 other hard link, which keeps the old content")
    assert os.stat(workspace / "store-copy.txt").st_nlink == 1


def test_a_file_without_other_links_says_nothing_of_links(
    workspace: Path, ctx: ToolContext
) -> None:
    (workspace / "f.txt").write_text("old line\n")
    assert change("edit_file", ctx).text == "edited f.txt: replaced 1 occurrence (line 1)"
    os.link(workspace / "f.txt", workspace / "a")
    os.link(workspace / "f.txt", workspace / "b")
    out = call(WriteFileTool(), ctx, path="f.txt", content="x")
    assert out.text == (
        "wrote 1 bytes to f.txt (overwrote); it had 2 other hard links, which keep the old content"
    )


# A directory dsh may not write into


def test_a_file_in_a_directory_dsh_may_not_write_into_is_written_in_place(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No temporary file can be made there (EACCES, as a non-root user in a read-only
    directory gets), so the file is written in place, as before: same inode, every link
    sees it."""
    target = workspace / "f.txt"
    target.write_text("old line\n")
    os.link(target, workspace / "other-name.txt")
    inode = os.stat(target).st_ino
    real = os.open

    def open_(path: Any, *args: Any, **kwargs: Any) -> int:
        if TEMP_MARK in os.fsdecode(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    out = change("edit_file", ctx)
    assert out.text == "edited f.txt: replaced 1 occurrence (line 1)"
    assert os.stat(target).st_ino == inode
    assert (workspace / "other-name.txt").read_text() == "new line\n"


def test_a_write_through_a_named_temporary_file_is_never_made_in_place(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``temp_name`` (undo's ``.NAME.dsh-undo-TAG.new``): its caller's clean-up counts on the
    file being only ever renamed over, so where that file cannot be made the write fails and
    the file is as it was."""
    target = workspace / "f.txt"
    target.write_text("old line\n")
    inode = os.stat(target).st_ino
    real = os.open

    def open_(path: Any, *args: Any, **kwargs: Any) -> int:
        if os.fsdecode(path) == ".f.txt.mine":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    with pytest.raises(PermissionError):
        write_regular_file(target, b"new line\n", "f.txt", temp_name=".f.txt.mine")
    assert target.read_text() == "old line\n" and os.stat(target).st_ino == inode
    monkeypatch.setattr(os, "open", real)
    write_regular_file(target, b"new line\n", "f.txt", temp_name=".f.txt.mine")
    assert sorted(p.name for p in workspace.iterdir()) == ["f.txt"]
    assert target.read_text() == "new line\n" and os.stat(target).st_ino != inode


# What is fsynced, and when


def test_the_bytes_are_synced_before_the_rename_and_every_new_name_after_it(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        path = _fd_path(fd)
        steps.append("fsync temp" if TEMP_MARK in path else f"fsync {path}")
        real_fsync(fd)

    def replace(*args: Any, **kwargs: Any) -> None:
        steps.append("replace")
        real_replace(*args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    call(WriteFileTool(), ctx, path="a/b/c.txt", content="x")
    root = workspace.resolve()
    assert steps == [
        "fsync temp",
        "replace",
        f"fsync {root / 'a' / 'b'}",  # c.txt's name
        f"fsync {root}",  # a's name
        f"fsync {root / 'a'}",  # b's name
    ]
    assert (workspace / "a" / "b" / "c.txt").read_text() == "x"


# Leftovers of a killed write


def _leftover(directory: Path, name: str, *, stale: bool = True) -> Path:
    path = directory / name
    path.write_text("old line\nhalf of the new\n")
    if stale:  # made by an earlier process
        when = atomic_write._LOADED_AT - 60
        os.utime(path, (when, when), follow_symlinks=False)
    return path


def test_the_next_write_of_a_file_removes_the_leftovers_of_earlier_processes_only(
    workspace: Path, ctx: ToolContext
) -> None:
    """Until then the other tools show a leftover as the ordinary hidden file it is."""
    (workspace / "f.txt").write_text("old line\n")
    stale = _leftover(workspace, ".f.txt.dsh-write-0123abcd.tmp")
    kept = [
        _leftover(workspace, ".f.txt.dsh-write-89abcdef.tmp", stale=False),  # a write now
        _leftover(workspace, ".g.txt.dsh-write-0123abcd.tmp"),  # another file's
        _leftover(workspace, ".f.txt.dsh-write-0123ABCD.tmp"),  # not a name dsh makes
        _leftover(workspace, ".f.txt.dsh-write-0123abcd.tmp~"),
        _leftover(workspace, "f.txt.dsh-write-0123abcd.tmp"),
    ]
    link = workspace / ".f.txt.dsh-write-00000000.tmp"
    link.symlink_to(workspace / "f.txt")
    if ROOT:
        kept.append(_leftover(workspace, ".f.txt.dsh-write-11111111.tmp"))
        os.chown(kept[-1], 12345, 12345)  # another user's
    assert stale.name in call(ListDirTool(), ctx).text.splitlines()
    assert f"{stale.name}:2: half of the new" in call(GrepTool(), ctx, pattern="half").text
    assert stale.name in call(GlobTool(), ctx, pattern="*.tmp").text.splitlines()

    change("edit_file", ctx)
    assert not stale.exists()
    assert all(path.exists() for path in kept) and link.is_symlink()
    assert stale.name not in call(ListDirTool(), ctx).text.splitlines()


def test_a_long_name_gets_a_temporary_name_that_fits_and_its_leftovers_are_found(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "é" * 120 + ".txt"  # 244 bytes: the temporary name is cut to fit 255
    (workspace / name).write_text("old line\n")
    prefix = temp_prefix(name)
    assert len(os.fsencode(prefix + "0123abcd.tmp")) <= 255 and prefix.endswith(TEMP_MARK)
    stale = _leftover(workspace, prefix + "0123abcd.tmp")
    made: list[str] = []
    real = os.open

    def open_(path: Any, *args: Any, **kwargs: Any) -> int:
        made.append(os.fsdecode(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    change("write_file", ctx, name)
    assert (workspace / name).read_text() == "new line\n"
    assert not stale.exists()
    assert any(path.startswith(prefix) for path in made)


@pytest.mark.parametrize("code", [errno.EIO, errno.EINVAL])
def test_a_directory_that_cannot_be_synced_after_the_rename_is_said_or_ignored(
    code: int, workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EIO: the call fails saying the new bytes are in place (they are); EINVAL: a file
    system that does not sync directories, the write succeeds."""
    (workspace / "f.txt").write_text("old line\n")
    real = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(code, os.strerror(code))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    if code == errno.EIO:
        err = refused_change("edit_file", ctx)
        assert err.code == "IO_ERROR"
        assert str(err) == (
            "I/O error f.txt: written, but its directory could not be synced: Input/output error"
        )
    else:
        change("edit_file", ctx)
    assert (workspace / "f.txt").read_text() == "new line\n"
    assert names(workspace) == ["f.txt"]
