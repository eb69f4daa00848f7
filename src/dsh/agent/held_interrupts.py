"""Ctrl-C held off while file operations must finish together: ``HeldInterrupts``.

A SIGINT raises ``KeyboardInterrupt`` wherever the main thread is: Python's own handler does
(``dsh undo``; ``dsh run``, whose SIGTERM and SIGHUP ``dsh.cli.termination`` turns into
SIGINT), and so does the one ``asyncio.run`` installs, from the second SIGINT on (the terminal
UI, where the Ctrl-C key is a key, not a signal, but a ``kill -INT`` is one). Raised between
two renames of an undo, or while it takes its steps back after a first one, it left a file
moved aside (``.NAME.dsh-undo-TAG.old``) under a command already answered, which no later
clean-up looks at.

While a ``HeldInterrupts`` is open in the main thread, SIGINT is counted instead
(``requested``); the code inside looks at it where stopping leaves things whole. On close the
handler it replaced is back, and each SIGINT held is delivered to it, in order: a Ctrl-C does
what it would have done, once the files are consistent. Elsewhere than in the main thread (the
web server's worker threads) it changes nothing: no signal handler runs there, so nothing is
raised there either. SIGTERM and SIGHUP are left alone: where they are not SIGINT already
(above), the faces handle them on their event loop: the web's undo runs on it and holds them
off; the terminal UI's runs its file work in worker threads (``dsh.agent.thread_steps``, the
hold still opened on the loop's main thread, looked at there between files) and its quit waits
for the undo to finish.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any


class HeldInterrupts:
    """A context in which SIGINT is counted, not raised (see the module's docstring)."""

    def __init__(self) -> None:
        self.held = 0
        """How many SIGINTs came while open."""
        self._previous: Any = None
        self._holding = False

    @property
    def requested(self) -> bool:
        """Whether a SIGINT came (something asked this process to stop)."""
        return self.held > 0

    def __enter__(self) -> HeldInterrupts:
        if threading.current_thread() is not threading.main_thread():
            return self
        previous = signal.getsignal(signal.SIGINT)
        if previous is None:  # a handler not set from Python: it could not be put back
            return self
        signal.signal(signal.SIGINT, self._hold)
        self._previous, self._holding = previous, True
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if not self._holding:
            return
        self._holding = False
        signal.signal(signal.SIGINT, self._previous)
        for _ in range(self.held):  # the first may raise: the rest asked for the same
            signal.raise_signal(signal.SIGINT)

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        self.held += 1
