"""A Linux subreaper and the process calls around it, shared by dsh's keepers and dsh.

``Subtree`` is what the keeper and a call keeper (:mod:`dsh.tools.keeper`) share: they are child
subreapers (``PR_SET_CHILD_SUBREAPER``), so every process below them stays below them; stop
signals and SIGCHLD wake their ``select`` through a pipe; they reap every child that exits and
kill their whole subtree, found under ``/proc`` (``descendants``). ``prctl`` is libc's, on
Linux; dsh itself uses it to make its own process non-dumpable (:mod:`dsh.tools.process_guard`).

Standard library only and importing little: the keeper program, which runs isolated from dsh's
environment, imports this module.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from types import FrameType
    from typing import Any
else:  # the C module under ``signal``, without its enums: the keeper imports little
    import _signal as signal

PR_SET_NAME = 15
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
RESET_SIGNALS = (*STOP_SIGNALS, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ)
"""Restored to their defaults in a call's program (Python ignores SIGPIPE and SIGXFSZ)."""

_PRCTL: list[Any] = []
"""libc's ``prctl``, looked up once (a forked call keeper finds it ready)."""


def prctl(option: int, value: int | bytes) -> bool:
    """``prctl(option, value)`` on Linux; False where it is not available or it failed."""
    if not sys.platform.startswith("linux"):
        return False
    if not _PRCTL:
        import ctypes

        try:
            _PRCTL.append(ctypes.CDLL(None, use_errno=True).prctl)
        except (OSError, AttributeError):
            return False
    return bool(_PRCTL[0](option, value, 0, 0, 0) == 0)


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (read from ``/proc``; empty where there is none)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    parents = [root]
    while parents:
        below = children.get(parents.pop(), [])
        found.extend(below)
        parents.extend(below)
    return found


class Subtree:
    """What a keeper and a call keeper share: signals woken into a ``select``, reaping, and
    killing everything below."""

    def __init__(self, name: bytes) -> None:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        prctl(PR_SET_NAME, name)
        self.stopping = False
        self.wake, self.wake_write = os.pipe()
        os.set_blocking(self.wake, False)
        os.set_blocking(self.wake_write, False)
        signal.set_wakeup_fd(self.wake_write, warn_on_full_buffer=False)
        for number in STOP_SIGNALS:
            signal.signal(number, self._stop)
        signal.signal(signal.SIGCHLD, lambda number, frame: None)  # wakes the select

    def _stop(self, number: int, frame: FrameType | None) -> None:
        self.stopping = True

    def reap(self) -> bool:
        """Reap every child that exited (``exited`` hears of each); False when none is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            self.exited(pid, status)

    def exited(self, pid: int, status: int) -> None:
        """A child was reaped."""

    def drain_wake(self) -> None:
        try:
            while os.read(self.wake, 512):
                pass
        except BlockingIOError:
            pass

    def release_wakeup(self) -> None:
        """Hand signals back (``set_wakeup_fd(-1)``) and close the wake pipe: in a forked child
        that makes its own."""
        signal.set_wakeup_fd(-1)
        os.close(self.wake)
        os.close(self.wake_write)

    def kill_all(self, group: int = 0) -> None:
        """SIGKILL the whole subtree (and the process ``group`` while it is set), round after
        round (a process may fork meanwhile, and a dying one's children come here), until no
        child is left."""
        while True:
            for pid in descendants(os.getpid()):
                sigkill(pid)
            if group:  # all there is to find without /proc
                try:  # noqa: SIM105 - no contextlib: the keeper imports little
                    os.killpg(group, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                group = self.group()
            try:
                os.waitpid(-1, 0)  # one child was killed and is gone: look again
            except ChildProcessError:
                return
            if not self.reap():
                return

    def group(self) -> int:
        """The process group still to kill without ``/proc`` (0: none)."""
        return 0


def sigkill(pid: int) -> None:
    """SIGKILL ``pid`` (nothing when it is gone)."""
    try:  # noqa: SIM105
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
