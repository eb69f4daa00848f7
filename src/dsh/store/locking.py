"""One writer per session: an advisory ``flock`` on a lock file that records the holder's pid.

The kernel drops the lock when the holder dies, so a crashed process never leaves a stale lock.
Readers never take it. A clean release empties the file, so a pid still in it when the lock is
next taken means its holder stopped without closing (``WriteLock.unclean_holder``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from dsh.errors import SessionLockedError, StoreError


class WriteLock:
    """An acquired writer lock; release it with :meth:`release` (or let the process end)."""

    def __init__(self, path: Path, fd: int, *, unclean_holder: int | None = None) -> None:
        self.path = path
        self._fd: int | None = fd
        self.unclean_holder = unclean_holder
        """The pid of the previous holder if it never released the lock (crashed or killed)."""

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):  # the pid is only informative; the flock matters
            os.ftruncate(self._fd, 0)
        os.close(self._fd)  # closing drops the flock
        self._fd = None


def acquire_write_lock(path: Path, session_id: str) -> WriteLock:
    """Take the writer lock or raise SessionLockedError naming the holder's pid."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot create lock file {path}: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_pid(fd)
        os.close(fd)
        who = f"process {holder}" if holder is not None else "another process"
        raise SessionLockedError(
            f"session {session_id} is already open for writing by {who}", holder_pid=holder
        ) from None
    previous = _read_pid(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass  # the pid is only informative; the lock is held
    return WriteLock(path, fd, unclean_holder=previous)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
