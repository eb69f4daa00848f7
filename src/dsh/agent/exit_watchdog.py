"""A process asked to stop by SIGTERM or SIGHUP ends, even when its clean stop hangs.

A stop signal starts a clean stop: the running turn is cancelled and logged, the session's
writer lock released, the process exits with 128 + the signal. Nobody is at the keyboard to
ask again (a closed terminal, a ``kill``, a container stop), so if that stop itself hangs — a
thread the interpreter waits for at exit, a shutdown step that never returns — dsh would stay
behind holding its session. :func:`arm` gives the stop :data:`STOP_WITHIN` seconds; past them
every thread's stack is written to ``<home>/logs/stuck-exit-<pid>.log`` (what to report) and
the process ends with status 1. The log is crash-safe, and the kernel releases the lock.

The file is written when the watchdog is armed and removed when the process exits on its own,
so one that stays names a stop that did not finish: with stacks, the watchdog ended it; without,
something else killed it (SIGKILL) first.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import os
import signal
import sys
import time
from pathlib import Path
from typing import IO

from dsh.config import dsh_home
from dsh.config.private_dirs import make_private_directory
from dsh.errors import ConfigError

STOP_WITHIN = 20.0
"""Seconds a stop a signal asked for may take before the watchdog ends the process."""


class _Armed:
    file: IO[str] | None = None
    path: Path | None = None


_armed = _Armed()


def stuck_log(home: Path, pid: int | None = None) -> Path:
    """Where a stop that did not finish writes its stacks."""
    return home / "logs" / f"stuck-exit-{os.getpid() if pid is None else pid}.log"


def arm_on_signal(signum: int) -> None:
    """:func:`arm`, in dsh's home, for a stop ``signum`` asked for."""
    try:
        home: Path | None = dsh_home()
    except (ConfigError, OSError):  # a home that cannot be used: the stacks go to stderr
        home = None
    arm(home, signal.Signals(signum).name)


def arm(home: Path | None, why: str, *, within: float = STOP_WITHIN) -> None:
    """End this process ``within`` seconds from now if it has not ended by then (see the
    module). Once per process; never raises (a stop must not fail on its watchdog): without a
    usable ``home`` the stacks go to standard error."""
    if _armed.file is not None:
        return
    file: IO[str] | None = None
    if home is not None:
        with contextlib.suppress(OSError):
            path = stuck_log(home)
            make_private_directory(path.parent)
            file = path.open("a", encoding="utf-8")
            file.write(
                f"dsh (pid {os.getpid()}) was asked to stop at {time.strftime('%Y-%m-%d %H:%M:%S')}"
                f" ({why}); the stacks below, if any, are where it still was {within:g} s later\n"
            )
            file.flush()
            _armed.path = path
            atexit.register(disarm)
    _armed.file = file if file is not None else _stderr()
    with contextlib.suppress(Exception):
        faulthandler.dump_traceback_later(within, exit=True, file=_armed.file)


def disarm() -> None:
    """The process exits on its own: the stop finished, so its file says nothing."""
    faulthandler.cancel_dump_traceback_later()
    if _armed.path is not None:
        with contextlib.suppress(OSError):
            _armed.path.unlink()


def _stderr() -> IO[str]:
    return sys.__stderr__ if sys.__stderr__ is not None else open(os.devnull, "w")
