"""Writing a file tool's bytes so that a crash leaves the old file or the new one, never a mix.

:func:`write_regular_file` (``write_file`` and ``edit_file`` write through it) never changes the
file it replaces. It writes the new bytes to a temporary file beside it,
``.NAME.dsh-write-XXXXXXXX.tmp`` (``X``: random hex digits; created with ``O_EXCL``, so never a
file that was there), fsyncs it, gives it the old file's permission bits and, as far as the
process may, its owner and group (where it may not — ``EPERM``, or a file system without owners
— the file becomes the process's own and no set-user-ID or set-group-ID bit is carried over),
renames it over the file (``os.replace``, one atomic step) and fsyncs the directory. So a
``kill -9`` or a power cut at any moment leaves the file with its complete old bytes or its
complete new bytes, and once the call returns both the bytes and the name are on stable storage
(as far as the disk honours fsync). If any step fails the temporary file is removed and the file
is as it was. A new file gets ``0o666`` less the umask, as ``open`` gives one.

A caller with its own clean-up of a killed write names the temporary file itself
(``temp_name``: undo's ``.NAME.dsh-undo-TAG.new``, ``dsh.agent.undo_files``): it is made with
``O_EXCL`` like the others, and the file is then only ever replaced by the rename — a directory
the process may not write into fails with ``PermissionError`` instead of being written in place
(below), so that clean-up can count on the file being whole.

What is at the path is checked (``lstat``) before anything is written, and again right before
the rename: anything but a regular file — a symlink, a FIFO, a socket, a device, a directory —
is refused with ``NOT_A_FILE`` and left as it is. What remains is the moment between that second
check and the rename: something put at the path then is replaced by the new file, not written
through, because a rename replaces the name itself and never follows a symlink there (a
directory put there makes the rename fail). The parent directory is opened once and every step
is taken relative to it, so the temporary file and the rename stay in one directory. A caller
that names the directory the path must stay within (``within``: the resolved workspace) has
that parent opened by ``open_directory_within`` (:mod:`dsh.config.small_file`, which reads a
project's ``AGENTS.md`` the same way), one name at a time from there without
following a symlink, so a directory on the way swapped for a symlink after the path was resolved
fails the write (``ELOOP`` / ``ENOTDIR``) instead of leading it out; without ``within`` the parent
is opened through its path, following what is there then.

Trade-offs, chosen as a careful tool does:

- **Hard links.** The rename gives the name a new file, so a file with other hard links is
  parted from them: they keep the old bytes. The edit stays whole or absent, and a shared copy
  — a package manager's store hard-linked into ``node_modules`` or a virtualenv — is never
  changed through one project's name for it. :func:`write_regular_file` returns how many other
  links kept the old bytes, so the tool can say so.
- **What the new file does not take over.** Only the permission bits, owner and group: extended
  attributes and ACL entries beyond the bits are not copied (the new file gets the directory's
  default ACL, as any new file there), and it is a new inode, so a program that follows the
  file by inode sees it renamed over.
- **A directory dsh may not write into.** No temporary file can be made beside a writable file
  in a directory the process may not write (``EACCES`` / ``EPERM``), so that file is written in
  place as it always was — truncated, written, then fsynced. It is the one case where a crash
  can leave the file cut short.
- **Leftovers.** A ``kill -9`` or a power cut before the rename leaves the temporary file (the
  file itself is whole). The next write of the same file removes its leftovers: regular files
  named exactly ``.NAME.dsh-write-`` + 8 hex digits + ``.tmp``, owned by this user, and last
  modified before this process loaded this module (so made by an earlier process; removing one
  another dsh was still writing would only make that write fail, never spoil the file). A
  leftover can always be deleted by hand: it is an unfinished copy of bytes that were never
  written. For a ``NAME`` of more than 231 bytes the name is cut so the temporary name fits 255.
  The look reads the directory's names: about 8 ms a write in a directory of 10,000 files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
from collections.abc import Sequence
from pathlib import Path

from dsh.config.small_file import open_directory_within
from dsh.errors import ToolError
from dsh.store.fd_write import write_all

TEMP_MARK = ".dsh-write-"
"""What the name of every temporary file a write makes beside a file holds."""

_NAME_MAX = 255
_SUFFIX_LEN = 8 + len(".tmp")  # 8 hex digits, then ".tmp"
_LEFTOVER_TAIL = re.compile(r"[0-9a-f]{8}\.tmp")
_LOADED_AT = time.time()
"""Leftovers modified before this were made by an earlier process."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_IN_PLACE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
"""Never block opening a FIFO (no reader: ``ENXIO``), never follow a symlink put in place of
the resolved file after the check (``ELOOP``)."""


def write_regular_file(
    path: Path,
    data: bytes,
    shown: str,
    *,
    temp_name: str | None = None,
    within: Path | None = None,
) -> int:
    """Make ``data`` the bytes of the regular file at ``path`` (created if absent), whole or not
    at all (see the module's docstring); the number of other hard links the file had, which keep
    its old bytes.

    ``path`` is a resolved path whose directory exists; ``shown`` is how messages name it.
    Anything but a regular file at ``path`` is refused with ``NOT_A_FILE`` and left as it is. An
    ``OSError`` names ``shown``. ``temp_name``: the temporary file's name, beside ``path``, for a
    caller that cleans up after a killed write itself (never written in place then).
    ``within``: the resolved directory ``path`` lies in, its parent opened from there without
    following a symlink (:func:`open_directory_within`).
    """
    try:
        if within is None:
            dir_fd = os.open(path.parent, _DIR_FLAGS)
        else:
            dir_fd = _open_parent_within(within, path, shown)
        try:
            return _write(path.name, dir_fd, data, shown, temp_name)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), shown) from exc


def _open_parent_within(root: Path, path: Path, shown: str) -> int:
    """``open_directory_within`` of ``path``'s directory; ``OUTSIDE_WORKSPACE`` for one whose
    way from ``root`` is no longer directories only."""
    try:
        return open_directory_within(root, path.parent)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        raise ToolError(
            f"{shown}: a directory on its way is no longer a directory (a symlink put there "
            "since its path was resolved?), so nothing was written",
            code="OUTSIDE_WORKSPACE",
        ) from exc


def sync_directories(directories: Sequence[Path]) -> None:
    """Fsync the parent of each of ``directories`` (ones a write just created), so their names
    are on stable storage with the file written in them."""
    for directory in directories:
        fsync_directory(directory.parent)


def temp_prefix(name: str) -> str:
    """The start of the temporary file names a write of the file ``name`` makes beside it:
    ``.NAME.dsh-write-`` (``NAME`` cut, on a character, so the whole name fits 255 bytes)."""
    room = _NAME_MAX - len(b".") - len(TEMP_MARK) - _SUFFIX_LEN
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return f".{name}{TEMP_MARK}"


def _write(name: str, dir_fd: int, data: bytes, shown: str, temp_name: str | None) -> int:
    before = _regular_or_absent(name, dir_fd, shown)
    _remove_leftovers(name, dir_fd)
    try:
        temp, fd = _create_temp(name, dir_fd, private=before is not None, named=temp_name)
    except PermissionError:
        if temp_name is not None:  # its caller counts on the file being only renamed over
            raise
        _write_in_place(name, dir_fd, data, shown)
        return 0
    try:
        try:
            if before is not None:
                _carry_over(fd, before)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        _regular_or_absent(name, dir_fd, shown)  # a symlink swapped in is not replaced
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    try:
        _fsync_dir_fd(dir_fd)
    except OSError as exc:  # the new bytes are in place: say so
        why = exc.strerror or str(exc)
        raise OSError(exc.errno, f"written, but its directory could not be synced: {why}") from exc
    return 0 if before is None else before.st_nlink - 1


def _regular_or_absent(name: str, dir_fd: int, shown: str) -> os.stat_result | None:
    """The ``lstat`` of the regular file ``name`` (None: nothing there); ``NOT_A_FILE`` for
    anything else."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown} is not a regular file", code="NOT_A_FILE")
    return info


def _create_temp(
    name: str, dir_fd: int, *, private: bool, named: str | None = None
) -> tuple[str, int]:
    """A new temporary file beside ``name`` (called ``named`` when given) and its descriptor:
    mode ``0o600`` while it waits for the old file's bits (``private``), else ``0o666`` less
    the umask."""
    prefix = temp_prefix(name)
    mode = 0o600 if private else 0o666
    if named is not None:
        return named, os.open(named, _TEMP_FLAGS, mode, dir_fd=dir_fd)
    for _ in range(100):
        temp = f"{prefix}{os.urandom(4).hex()}.tmp"
        try:
            return temp, os.open(temp, _TEMP_FLAGS, mode, dir_fd=dir_fd)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", prefix)


def _carry_over(fd: int, before: os.stat_result) -> None:
    """Give the temporary file the old file's owner and group where the process may, then its
    permission bits (a change of owner clears set-user-ID and set-group-ID bits, so the bits
    come last; they are dropped where the owner could not be carried over)."""
    bits = stat.S_IMODE(before.st_mode)
    own = os.fstat(fd)
    if (own.st_uid, own.st_gid) != (before.st_uid, before.st_gid):
        try:
            os.fchown(fd, before.st_uid, before.st_gid)
        except OSError:  # EPERM; or a file system without owners (EINVAL, ENOTSUP)
            bits &= ~(stat.S_ISUID | stat.S_ISGID)
            with contextlib.suppress(OSError):
                os.fchown(fd, -1, before.st_gid)  # a group the process is in
    os.fchmod(fd, bits)


def _write_in_place(name: str, dir_fd: int, data: bytes, shown: str) -> None:
    """The old way, for a file whose directory dsh may not write into: truncate, write,
    fsync."""
    try:
        fd = os.open(name, _IN_PLACE_FLAGS, 0o666, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.ELOOP, errno.EOPNOTSUPP):
            raise ToolError(f"{shown} is not a regular file", code="NOT_A_FILE") from exc
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolError(f"{shown} is not a regular file", code="NOT_A_FILE")
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_leftovers(name: str, dir_fd: int) -> None:
    """Remove the temporary files earlier processes' writes of ``name`` left (see the module's
    docstring); one that cannot be removed is left."""
    prefix = temp_prefix(name)
    uid = os.geteuid()
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            if not entry.name.startswith(prefix):
                continue
            if not _LEFTOVER_TAIL.fullmatch(entry.name, len(prefix)):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
                mine = stat.S_ISREG(info.st_mode) and info.st_uid == uid
                if mine and info.st_mtime < _LOADED_AT:
                    os.unlink(entry.name, dir_fd=dir_fd)
            except OSError:
                continue


def fsync_directory(directory: Path) -> None:
    """Fsync ``directory``, so the names just made, renamed or removed in it are on stable
    storage (a file system that cannot keeps them its own way)."""
    fd = os.open(directory, _DIR_FLAGS)
    try:
        _fsync_dir_fd(fd)
    finally:
        os.close(fd)


def _fsync_dir_fd(fd: int) -> None:
    """Fsync a directory; a file system that cannot (``EINVAL``) keeps its names its own way."""
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
