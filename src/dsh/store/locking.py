"""One writer per session: an advisory ``flock`` on a lock file that records the holder's pid.

The kernel drops the lock when the holder dies, so a crashed process never leaves a stale lock.
Readers never take it. A clean release empties the file, so a pid still in it when the lock is
next taken means its holder stopped without closing (``WriteLock.unclean_holder``). A writer
refused the lock is told, in one line, who holds the session and what lets it in
(``release_hint``). Who holds a session is found without taking its lock
(``holder_elsewhere``): what the session list of ``dsh web`` and the session picker mark busy.
A choice that must be made by one process at a time across the whole store (a fork's number)
is made under ``store_mutex``: an ``flock`` on ``<home>/locks/_<name>.lock``, waited for.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from dsh.config.private_dirs import make_private_directory
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


LABEL_CHARS = 60

MUTEX_WAIT_S = 30.0
"""How long ``store_mutex`` waits for another holder before it gives up: what it guards takes
milliseconds, so a holder this slow is stuck (stopped, on a hung disk)."""


class MutexUnavailable(StoreError):
    """``store_mutex`` could not be taken: held elsewhere past its wait, or no lock file."""


_IN_MEMORY = threading.Lock()
"""``store_mutex`` of a store with no home (the memory store): its sessions are this process's."""


@contextlib.contextmanager
def store_mutex(store: Any, name: str, *, wait_s: float | None = None) -> Iterator[None]:
    """Held by one process (and thread) at a time among all that use ``store``: an exclusive
    ``flock`` on ``<home>/locks/_<name>.lock`` (no session's lock: an id begins with a letter or
    a digit), whose holder writes its pid and label there (the
    kernel drops it if its holder dies, so it never goes stale; each taking opens the file
    anew, so threads exclude each other too); a store with no home takes a lock of this
    process's. Waited for up to ``wait_s`` seconds (``MUTEX_WAIT_S`` when None), then
    ``MutexUnavailable`` naming the holder, as when the file cannot be made."""
    wait_s = MUTEX_WAIT_S if wait_s is None else wait_s
    home = getattr(store, "home", None)
    if home is None:
        if not _IN_MEMORY.acquire(timeout=wait_s):
            raise MutexUnavailable(f"this process has held the {name} lock for over {wait_s:g} s")
        try:
            yield
        finally:
            _IN_MEMORY.release()
        return
    path = Path(home) / "locks" / f"_{name}.lock"
    try:
        make_private_directory(path.parent)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise MutexUnavailable(f"cannot create lock file {path}: {exc.strerror}") from exc
    try:
        _wait_for(fd, path, wait_s)
        with contextlib.suppress(OSError):  # the pid is only informative; the flock matters
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n{holder_label()}\n".encode(), 0)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):  # released: no holder named
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # the lock with it


def _wait_for(fd: int, path: Path, wait_s: float) -> None:
    """Take the exclusive ``flock`` on ``fd``, trying again at growing pauses (1 ms to 50 ms)
    while another holds it, for up to ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder, label = _read_holder(fd)
                who = f"process {holder}" if holder is not None else "another process"
                who += f" ({label})" if label else ""
                raise MutexUnavailable(f"{who} has held {path} for over {wait_s:g} s") from None
            time.sleep(pause)
            pause = min(pause * 2, 0.05)


def acquire_write_lock(path: Path, session_id: str) -> WriteLock:
    """Take the writer lock or raise SessionLockedError naming the holder's pid."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot create lock file {path}: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder, label = _read_holder(fd)
        os.close(fd)
        raise SessionLockedError(
            f"session {session_id} is already open for writing by {holder_words(holder, label)}",
            holder_pid=holder,
        ) from None
    previous, _ = _read_holder(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{holder_label()}\n".encode(), 0)
    except OSError:
        pass  # the pid is only informative; the lock is held
    return WriteLock(path, fd, unclean_holder=previous)


def holder_label() -> str:
    """What this process is, for another one refused the lock: the program and its command
    (``dsh web``, ``dsh run``; ``dsh`` for the terminal UI), printable, at most 60 characters."""
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    command = next((a for a in sys.argv[1:2] if a and not a.startswith("-")), "")
    label = f"{program} {command}".strip()
    return "".join(c if c.isprintable() else "?" for c in label)[:LABEL_CHARS]


def holder_words(pid: int | None, label: str) -> str:
    """Who holds a session and what lets it in, as a refused writer is told it: ``process 4242
    (dsh web), which holds it until that server stops: …``."""
    who = f"process {pid}" if pid is not None else "another process"
    if label:
        who += f" ({label})"
    return who + release_hint(label)


def release_hint(label: str) -> str:
    """What a writer refused the lock can do, by what holds it (``holder_label``'s words), as
    the end of the refusal's line: ``dsh web`` keeps a session from the first prompt a page sent
    it (or its ``POST …/resume``) until the server stops, the terminal UI while the session is
    open in it, ``dsh run`` until its prompt's turn ends, the other commands (``dsh undo``,
    ``dsh compact``, ``dsh sessions …``) while they run; of a holder that wrote no label (an
    older dsh) nothing more is known."""
    program, _, command = label.partition(" ")
    if command == "web":
        return (
            ", which holds it until that server stops: go on in its page, or stop that "
            "`dsh web` (Ctrl-C where it runs)"
        )
    if command == "run":
        return ", which holds it until its turn ends: try again then"
    if program == "dsh" and not command:  # the terminal UI
        return (
            ", which holds it while it is open there: leave it there first (/new, /resume "
            "another session, or quit)"
        )
    return ": try again once that process is done with it"


def recorded_holder(path: Path) -> tuple[int | None, str]:
    """The pid and label the lock file at ``path`` records (``(None, "")`` when it records
    none or cannot be read); whether that process still holds the lock is not known here."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None, ""
    try:
        return _read_holder(fd)
    finally:
        os.close(fd)


class Holder(NamedTuple):
    """Another process holding a session's writer lock: its pid and label (``holder_label``'s
    words; empty from an older dsh)."""

    pid: int
    label: str


def session_holder(store: Any, session_id: str) -> Holder | None:
    """Another live process holding the session's writer lock (``holder_elsewhere`` on the
    store's ``lock_path``: a JSONL session's directory, a SQLite database's ``locks/``; a memory
    store has none, so None)."""
    lock_path = getattr(store, "lock_path", None)
    return None if lock_path is None else holder_elsewhere(lock_path(session_id))


def holder_elsewhere(path: Path) -> Holder | None:
    """The process holding the writer lock at ``path``, if it is another live one; None when
    none does: no lock file, an empty one (never taken, or released cleanly: a ``stat``, the
    usual case), a pid that is gone (a crashed holder's flock went with it) or this process's.
    A recorded pid that is alive is checked against the flock itself, taken shared and let go
    at once, so a pid a crashed holder left, since reused by an unrelated process, does not
    make a free session held. Taking no writer lock, it leaves the file as it is (the pid of a
    holder that stopped without closing, which the next writer reports)."""
    try:
        if os.stat(path).st_size == 0:
            return None
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        pid, label = _read_holder(fd)
        if live_holder(pid) is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            assert pid is not None  # live_holder said it is alive
            return Holder(pid, label)
        except OSError:
            return None
        return None  # nobody holds it: the recorded pid is a stale one
    finally:
        os.close(fd)  # closing lets go of the shared lock, if it was taken


def live_holder(pid: int | None) -> int | None:
    """``pid``, a pid a lock file records, if that process is alive and is not this one (a
    number no process has, 0 or past the kernel's range, is none)."""
    if pid is None or pid <= 0 or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return None
    except PermissionError:
        return pid  # alive, someone else's
    return pid


def _read_holder(fd: int) -> tuple[int | None, str]:
    """The pid and label a holder wrote (its first and second lines); an older dsh wrote the
    pid alone."""
    try:
        text = os.pread(fd, 32 + LABEL_CHARS * 4, 0).decode("utf-8", "replace")
    except OSError:
        return None, ""
    pid, _, rest = text.partition("\n")
    pid = pid.strip()
    label = rest.partition("\n")[0].strip()
    label = "".join(c if c.isprintable() else "?" for c in label)[:LABEL_CHARS]
    return (int(pid) if pid.isdigit() else None), label
