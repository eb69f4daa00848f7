"""Textual's terminal driver, made to survive the terminal going away.

A closed terminal window, ``tmux kill-session`` or a dropped ssh connection sends dsh SIGHUP,
and the UI quits as on ctrl+q (``dsh.agent.stop_signals``). By then the terminal is gone and
every write to it fails (``EIO``). Textual writes from a background thread fed by a queue of 30
writes; the first failed write ended that thread, the queue filled while the app shut down, and
the main thread waited on it forever: dsh stayed behind with no terminal, ignoring SIGTERM and
SIGHUP alike, holding its session's writer lock (3 of 4 tmux sessions killed while a long
session opened). With :class:`HangupSafeDriver` the output stream drops what it cannot write
once the terminal is gone, so the shutdown runs to its end: the running turn cancelled and
logged, the lock released, exit 128 + the signal.
"""

from __future__ import annotations

from typing import IO, Any

from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver


class TerminalStream:
    """A text stream to the terminal that stops writing, silently, once a write has failed.

    Nothing can be shown on a terminal that is gone, so a write or flush failing with
    ``OSError`` marks it :attr:`gone` and this and every later write are dropped (counted as
    written, as a file would).
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self._stream.write(text)
            except OSError:
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except OSError:
                self.gone = True

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class HangupSafeDriver(LinuxDriver):
    """Textual's POSIX terminal driver, writing through a :class:`TerminalStream`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self._file is not None:  # Textual's file is typed as the stream it usually is
            self._file = TerminalStream(self._file)  # type: ignore[assignment]


def hangup_safe(driver_class: type[Driver]) -> type[Driver]:
    """The driver to run the UI with: :class:`HangupSafeDriver` in place of Textual's own
    terminal driver; any other (the headless one, one named by ``TEXTUAL_DRIVER``) as it is."""
    return HangupSafeDriver if driver_class is LinuxDriver else driver_class
