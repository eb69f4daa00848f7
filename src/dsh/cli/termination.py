"""SIGTERM and SIGHUP stop a command the way Ctrl-C does, not by killing it.

``timeout 600 dsh run …``, a CI job's cancel, a container stop or a closed terminal send
SIGTERM or SIGHUP; their default action killed dsh mid-turn: the text a model had streamed so
far was never logged and the turn stayed open. ``install`` turns each into a SIGINT, so the
command's own Ctrl-C handling runs (``dsh run`` cancels the turn cleanly and logs what was
streamed; ``dsh compact`` answers its command as cancelled), and remembers which signal it was
so the command can stop there and exit with 128 + its number, as a shell expects. The clean
stop is given ``dsh.agent.exit_watchdog.STOP_WITHIN`` seconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from types import FrameType

from dsh.agent.exit_watchdog import arm_on_signal, disarm
from dsh.agent.stop_signals import STOP_SIGNALS


class _Received:
    signum: int | None = None


received = _Received()


def install() -> None:
    """From now on SIGTERM and SIGHUP arrive as SIGINT (see the module docstring).

    A SIGINT inherited as ignored (a background job of a shell script, ``cmd &`` in a shell
    without job control) gets Python's own handler back first: otherwise the SIGINT each of
    them becomes would be dropped, and nothing but SIGKILL could stop dsh. Ctrl-C then stops
    such a dsh too."""
    received.signum = None
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # asyncio handles it from here
    for signum in STOP_SIGNALS:
        signal.signal(signum, _as_interrupt)


def settle() -> None:
    """The command has returned (``dsh.cli.main.main``'s last step): from now on a stop signal —
    a second SIGTERM while the interpreter waits for a thread at exit — ends the process at
    once, quietly, with the status the first stop set (else 128 + its own number). Raised as an
    interrupt there, it printed a ``KeyboardInterrupt`` traceback from ``threading._shutdown``.
    Nothing changes in a process that never installed the stop handlers."""
    if signal.getsignal(STOP_SIGNALS[0]) is not _as_interrupt:
        return
    for signum in (signal.SIGINT, *STOP_SIGNALS):
        signal.signal(signum, _exit_now)


def _exit_now(signum: int, frame: FrameType | None) -> None:
    disarm()  # the stop is over: no stuck-exit log is left behind
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(128 + (received.signum or signum))


def note_interrupt() -> None:
    """A Ctrl-C (SIGINT itself) asked this process to stop: ``stopped_by`` says so from now on."""
    if received.signum is None:
        received.signum = signal.SIGINT


def stopped_by() -> int | None:
    """The signal that asked this process to stop, if one did."""
    return received.signum


def exit_status() -> int:
    """128 + the stopping signal's number (130 for SIGINT, 143 for SIGTERM)."""
    assert received.signum is not None
    return 128 + received.signum


def name() -> str:
    assert received.signum is not None
    return signal.Signals(received.signum).name


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    received.signum = signum
    arm_on_signal(signum)  # nobody is there to ask again if the clean stop hangs
    signal.raise_signal(signal.SIGINT)
