"""Reading a small file that a repository or the user controls, so that it cannot hang dsh or
fill its memory: the configs (``./.dsh/config.toml``, ``$DSH_HOME/config.toml``), ``AGENTS.md``,
a prompt command, ``.git/HEAD``.

A cloned repository decides what such a path is, and git commits a symlink to ``/dev/zero`` (a
read that never ends) as easily as a file; a FIFO blocks whoever opens it until a writer comes.
So :func:`read_small_file` follows symlinks but reads only a regular file: it looks first (a
device is never opened), opens with ``O_NONBLOCK`` (a FIFO's open returns at once), checks what
it opened with ``fstat`` (a path swapped after the look is caught), and reads at most ``limit``
bytes, each caller's limit fitting its file. A refusal is an :class:`UnreadableFile` whose
``reason`` is one short line for the caller's warning. :func:`read_file_head` reads the first
``limit`` bytes of a longer file instead of refusing it (``AGENTS.md`` is cut, not dropped).

A project's file that dsh reads into the model's context on its own (``AGENTS.md``, a prompt
command) must lie in the workspace, as every path a file tool is given must: a repository
commits a symlink to ``~/.ssh/id_ed25519`` as easily as one to ``/dev/zero``. Such a caller
names the directory (``within``): the path is resolved (symlinks followed, ``..`` collapsed) and
refused, with ``OUTSIDE`` as its reason and nothing outside looked at, unless it lies inside the
resolved directory; then it is opened one name at a time from that directory without following
a symlink (:func:`open_directory_within`, the walk the file tools' writes take), so a directory
on the way swapped for a symlink after the path was resolved fails the read (``ELOOP``,
``ENOTDIR``) instead of leading it out. A symlink that stays inside is followed as before.

This module sits in the lowest layer with files (``dsh.config``) so that every layer reads
through it; a file dsh writes itself (the session store, its caches) is read where it lives.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO, NamedTuple

KIB = 1024
MIB = 1024 * KIB
CHUNK = 64 * KIB
"""One ``read`` call asks for at most this much."""
_MISSING = (errno.ENOENT, errno.ENOTDIR)
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
OUTSIDE = "it leads outside the workspace (a symlink on its way points out of it)"
"""The reason a file read ``within`` the workspace is refused when it resolves outside: it never
names where it leads."""


class UnreadableFile(Exception):
    """A small file refused: ``reason`` says why in a few words (``a FIFO, not a regular
    file``, ``Permission denied``, ``70,000 bytes, over the limit of 64 KiB``), without the
    path, which ``str()`` adds in front."""

    def __init__(self, path: Path, reason: str, *, missing: bool = False) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason
        self.missing = missing
        """True when there is no such file (nor a directory to hold it): nothing to warn of."""


class FileHead(NamedTuple):
    """The first bytes of a file (:func:`read_file_head`)."""

    data: bytes
    cut: bool
    """True when the file holds more than ``data``."""


def read_small_file(path: Path, limit: int, *, within: Path | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed); ``UnreadableFile`` when
    it is something else (a FIFO, a device, a directory), cannot be opened, or holds more than
    ``limit`` bytes. Never blocks on a FIFO and never reads more than ``limit + 1`` bytes.
    ``within``: the directory ``path`` must resolve inside (the workspace), else refused with
    the reason ``OUTSIDE`` (see the module's docstring)."""
    head = _read(path, limit, refuse_longer=True, within=within)
    return head.data


def read_file_head(path: Path, limit: int, *, within: Path | None = None) -> FileHead:
    """At most the first ``limit`` bytes of the regular file at ``path``, and whether it holds
    more; refused as :func:`read_small_file` refuses, except for its length."""
    return _read(path, limit, refuse_longer=False, within=within)


def lies_within(path: Path, directory: Path) -> bool:
    """True when ``path`` resolves (symlinks followed, ``..`` collapsed) to ``directory`` or
    below it, as ``directory`` resolves: what a project file dsh reads on its own must do."""
    resolved, root = Path(os.path.realpath(path)), Path(os.path.realpath(directory))
    return resolved == root or resolved.is_relative_to(root)


def open_directory_within(root: Path, directory: Path) -> int:
    """A descriptor of ``directory`` (a resolved path at or below the resolved ``root``), opened
    one name at a time from ``root`` with ``O_NOFOLLOW``: a symlink at any step below ``root``
    fails with ``ELOOP`` or ``ENOTDIR`` and is never followed, so what the descriptor names is
    inside ``root`` whatever was swapped in since the path was resolved. ``EINVAL`` for a
    ``directory`` not below ``root`` by name (or with a ``..`` in it)."""
    names = directory.parts[len(root.parts) :]
    if directory.parts[: len(root.parts)] != root.parts or any(n in (".", "..") for n in names):
        raise OSError(errno.EINVAL, "not a resolved path inside the directory it must stay in")
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in names:
            inner = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular_file(path: Path) -> BinaryIO:
    """``path`` (symlinks followed) opened for a binary read of any length, only when what was
    opened is a regular file: the open cannot block on a FIFO swapped in after the caller
    looked at the path (``O_NONBLOCK``), and ``fstat`` checks what the descriptor holds before
    it is made blocking again. ``UnreadableFile`` when it is something else (a directory, a
    FIFO, a device); an ``OSError`` of the open itself (no such file, no permission) is raised
    as it is, for the caller's own wording."""
    fd = os.open(path, _FLAGS)
    try:
        _check_regular(path, os.fstat(fd), None)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_regular_file(path: Path) -> None:
    """``UnreadableFile`` unless ``path`` (symlinks followed) is a regular file: a look only,
    nothing opened (a FIFO's open would block, a device's read never end)."""
    try:
        found = os.stat(path)
    except OSError as exc:
        raise _refusal(path, exc) from exc
    _check_regular(path, found, None)


def read_regular_file(path: Path) -> bytes:
    """All the bytes of the regular file at ``path`` (:func:`open_regular_file`)."""
    with open_regular_file(path) as fh:
        return fh.read()


NAMED_FILE_LIMIT = 256 * MIB
"""The most a file named on the command line is read from when it is a pipe (``<(cmd)``,
``/dev/stdin``): ``/dev/zero`` given by mistake filled memory until the kernel killed dsh."""


def read_named_file(path: Path, *, limit: int = NAMED_FILE_LIMIT) -> bytes:
    """The bytes of a file a person named (``--prompts-file``, ``--script``, an import): a
    regular file whole; a pipe or FIFO (``<(cmd)``, ``/dev/stdin``) up to ``limit`` bytes, more
    refused. A device or a directory is an ``UnreadableFile``; so is a failed open, with its
    reason (no such file, no permission)."""
    try:
        with open(path, "rb") as fh:
            found = os.fstat(fh.fileno())
            if stat.S_ISREG(found.st_mode):
                return fh.read()
            if not stat.S_ISFIFO(found.st_mode) and not stat.S_ISSOCK(found.st_mode):
                raise UnreadableFile(path, f"{_kind(found.st_mode)}, not a file")
            data = _read_up_to(fh.fileno(), limit + 1)
    except OSError as exc:
        raise _refusal(path, exc) from exc
    if len(data) > limit:
        raise UnreadableFile(path, f"more than {shown_size(limit)} read from a pipe; stopped")
    return data


def read_stream_bounded(fd: int, what: str, *, limit: int = NAMED_FILE_LIMIT) -> bytes:
    """All of the stream ``fd`` (standard input), refused past ``limit`` bytes as
    ``UnreadableFile`` named ``what``."""
    data = _read_up_to(fd, limit + 1)
    if len(data) > limit:
        raise UnreadableFile(Path(what), f"more than {shown_size(limit)}; stopped")
    return data


def _read(path: Path, limit: int, *, refuse_longer: bool, within: Path | None) -> FileHead:
    try:
        if within is None:
            _check_regular(path, os.stat(path), limit if refuse_longer else None)
            fd = os.open(path, _FLAGS)
        else:
            fd = _open_within(path, within, limit if refuse_longer else None)
    except OSError as exc:
        raise _refusal(path, exc) from exc
    try:
        found = os.fstat(fd)  # what was opened, even if the path changed since the look
        _check_regular(path, found, limit if refuse_longer else None)
        data = _read_up_to(fd, limit + 1)
    except OSError as exc:
        raise _refusal(path, exc) from exc
    finally:
        os.close(fd)
    cut = len(data) > limit
    if cut and refuse_longer:  # it grew since the look, or says no size (a /proc file)
        raise UnreadableFile(path, f"over the limit of {shown_size(limit)}")
    return FileHead(data[:limit], cut)


def _open_within(path: Path, within: Path, limit: int | None) -> int:
    """``path`` opened (``_FLAGS``) through its resolved path, one name at a time from the
    resolved ``within`` without following a symlink; ``OUTSIDE`` when it resolves elsewhere
    (nothing there looked at). A look (``lstat``) first, as ``_read``'s, so a device is never
    opened."""
    root = Path(os.path.realpath(within))
    resolved = Path(os.path.realpath(path))
    if resolved == root:  # a symlink to the workspace itself
        raise UnreadableFile(path, os.strerror(errno.EISDIR))
    if not resolved.is_relative_to(root):
        raise UnreadableFile(path, OUTSIDE)
    dir_fd = open_directory_within(root, resolved.parent)
    try:
        found = os.stat(resolved.name, dir_fd=dir_fd, follow_symlinks=False)
        _check_regular(path, found, limit)  # a symlink put there since: refused
        return os.open(resolved.name, _FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _check_regular(path: Path, found: os.stat_result, limit: int | None) -> None:
    mode = found.st_mode
    if stat.S_ISDIR(mode):
        raise UnreadableFile(path, os.strerror(errno.EISDIR))
    if not stat.S_ISREG(mode):
        raise UnreadableFile(path, f"{_kind(mode)}, not a regular file")
    if limit is not None and found.st_size > limit:
        raise UnreadableFile(
            path, f"{found.st_size:,} bytes, over the limit of {shown_size(limit)}"
        )


def _read_up_to(fd: int, wanted: int) -> bytes:
    parts: list[bytes] = []
    left = wanted
    while left > 0:
        part = os.read(fd, min(left, CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _refusal(path: Path, exc: OSError) -> UnreadableFile:
    reason = exc.strerror or type(exc).__name__
    return UnreadableFile(path, reason, missing=exc.errno in _MISSING)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def shown_size(size: int) -> str:
    """``size`` bytes as a limit is said: ``1 MiB``, ``4 KiB``, ``64,000 bytes``."""
    if size >= MIB and size % MIB == 0:
        return f"{size // MIB} MiB"
    if size >= KIB and size % KIB == 0:
        return f"{size // KIB} KiB"
    return f"{size:,} bytes"
