"""dsh's standard streams as a shell tool treats them: a closed one, a reader that went away.

``reserve`` runs first thing in the console script. A descriptor 0, 1 or 2 that the caller
closed (``dsh run - <&-``, ``dsh … >&-``) is opened on ``/dev/null``: the interpreter had set
``sys.stdin`` (or ``stdout``, ``stderr``) to None, which a command met as a traceback, and the
next file dsh opened (a session's log, its lock) would have taken the free number, so what a
child process inherits as its standard stream. A closed stdin then reads as empty and a closed
stdout or stderr swallows what is written to it, as ``/dev/null`` does.

``reader_gone`` tells a ``BrokenPipeError`` of stdout (``dsh sessions list | head -1``: the
reader has what it wanted) from any other: ``leave_quietly`` then ends the command as a shell
tool does (``dsh --help`` and ``dsh --version`` too, which print while the command line
parses), without a message, with the status a shell reports for a tool its pipe stopped
(141, 128 + SIGPIPE). A turn ``dsh run`` was running then is cancelled, and its ``turn/end``
says so (``CANCELLED_OUTPUT_CLOSED``), not that the user cancelled it.

``watch_reader`` looks for that reader going away while a turn runs, every
``READER_CHECK_EVERY`` seconds, not only when dsh next writes: a plain ``dsh run "a" "b" |
head -1`` writes nothing during a turn but its final answer, so the reader that left after the
first answer would only be met once the second turn had run in full (its tools included).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable

EXIT_PIPE_CLOSED = 141
"""128 + SIGPIPE, what a shell reports for a tool whose output pipe was closed."""

CANCELLED_OUTPUT_CLOSED = "cancelled because dsh's output was closed (its reader went away)"
"""Why a turn stopped that ``dsh run`` cancelled because stdout's reader went away (``dsh run
--json … | head -1``): its ``turn/end``'s error and its cancelled calls' results."""

READER_CHECK_EVERY = 0.25
"""Seconds between two looks at stdout's reader while ``watch_reader`` runs."""

_STREAMS = (("stdin", "r"), ("stdout", "w"), ("stderr", "w"))


def reserve() -> None:
    """Open ``/dev/null`` on each of descriptors 0, 1 and 2 that is closed, and give
    ``sys.stdin``, ``sys.stdout`` or ``sys.stderr`` back a stream on it (see the module doc)."""
    for fd, (name, mode) in enumerate(_STREAMS):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        opened = os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one
        if opened != fd:  # pragma: no cover - a lower one is open (checked in order)
            os.dup2(opened, fd)
            os.close(opened)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False, errors="backslashreplace"))  # noqa: SIM115


def reader_gone() -> bool:
    """True when stdout is a pipe or socket whose reading end has been closed."""
    import select

    if sys.stdout is None or not hasattr(select, "poll"):
        return False
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def stdout_is_a_pipe() -> bool:
    """True when stdout is a pipe or socket: a reader that can go away (a terminal's end is
    SIGHUP's, a file has none)."""
    try:
        mode = os.fstat(sys.stdout.fileno()).st_mode
    except (AttributeError, OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def watch_reader(on_gone: Callable[[], None]) -> None:
    """Call ``on_gone`` once stdout's reader has gone (``reader_gone``), looking every
    ``READER_CHECK_EVERY`` seconds; returns at once when stdout is no pipe or socket. Run it as
    a task beside the work it stops, and cancel it when that work ends."""
    import asyncio  # here: ``dsh --help`` imports this module, and no event loop

    if not stdout_is_a_pipe():
        return
    while not reader_gone():
        await asyncio.sleep(READER_CHECK_EVERY)
    on_gone()


def leave_if_reader_gone(exc: BaseException) -> None:
    """``leave_quietly`` when ``exc`` is stdout's reader going away (a ``BrokenPipeError`` and
    ``reader_gone``); else return, and the caller reports ``exc`` as the error it is."""
    if isinstance(exc, BrokenPipeError) and reader_gone():
        leave_quietly()


def leave_quietly() -> None:
    """Exit with ``EXIT_PIPE_CLOSED``, nothing printed: stdout is pointed at ``/dev/null`` first,
    so the interpreter's last flush of what is still buffered for it does not complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(EXIT_PIPE_CLOSED)
