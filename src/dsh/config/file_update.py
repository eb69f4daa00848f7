"""Read-modify-write of a small file that several dsh processes may update at once: the user
config's ``[trust]`` tables (``dsh trust``), ``<home>/cache/lone-think.json``.

Each such update reads the file, changes it and replaces it whole. Two processes doing that at
the same moment would each write what they read plus their own change, and the second rename
would undo the first's (a ``dsh trust --remove`` undone by a ``dsh trust`` of another directory
a moment later). So an update holds :func:`update_lock`, an exclusive ``flock`` on a sidecar
lock file beside the file (``.<name>.lock``: the file itself is replaced, so it cannot carry the
lock), from its read to its rename; and :func:`replace_file` writes through a temporary name of
its own (pid and random), so no two writers share one, then renames it over the file: a reader
sees the old file or the new, never part of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


def lock_path(path: Path) -> Path:
    """The sidecar lock file of ``path``."""
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def update_lock(path: Path) -> Iterator[None]:
    """Hold the exclusive update lock of ``path`` (waiting for another holder to finish); the
    directory must exist. An ``OSError`` opening the lock file propagates."""
    fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the lock with it


def replace_file(path: Path, data: bytes, mode: int) -> None:
    """Replace ``path`` with ``data`` whole: written to a temporary file of this call's own
    (with permissions ``mode``, whatever the umask), flushed to disk, renamed over ``path``. On
    failure the temporary file is removed and the ``OSError`` propagates; ``path`` is as it was."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    fd = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode
    )
    try:
        with os.fdopen(fd, "wb") as handle:  # a buffered write: every byte, or an OSError
            os.fchmod(fd, mode)  # the umask narrowed the create
            handle.write(data)
            handle.flush()
            os.fsync(fd)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
