"""Textual's terminal driver, made to survive the terminal going away and to read input as sent.

A closed terminal window, ``tmux kill-session`` or a dropped ssh connection sends dsh SIGHUP,
and the UI quits as on ctrl+q (``dsh.agent.stop_signals``). By then the terminal is gone and
every write to it fails (``EIO``). Textual writes from a background thread fed by a queue of 30
writes; the first failed write ended that thread, the queue filled while the app shut down, and
the main thread waited on it forever: dsh stayed behind with no terminal, ignoring SIGTERM and
SIGHUP alike, holding its session's writer lock (3 of 4 tmux sessions killed while a long
session opened). With :class:`HangupSafeDriver` the output stream drops what it cannot write
once the terminal is gone, so the shutdown runs to its end: the running turn cancelled and
logged, the lock released, exit 128 + the signal.

It reads the terminal's input itself (:meth:`HangupSafeDriver.run_input_thread`):

- every bracketed paste arrives whole, whatever it holds (``dsh.tui.terminal_input``);
- bytes that are not UTF-8 are read as their escapes (``\\xe9``) where Textual's reader
  stopped with a traceback, ending dsh;
- what was typed before the UI took the terminal (while dsh started, the terminal in its line
  mode turned enter into a line feed) is read with enter as enter, not as ctrl+j;
- a read that finds the terminal gone quits the UI as SIGHUP does (:class:`TerminalGone`),
  so dsh never waits forever for a hangup signal that did not come to it;
- the SIGCONT a closed terminal sends beside its SIGHUP does not restart the UI (only one
  after ctrl+z does): the restart left a second input thread behind, which held dsh at exit
  (seen: a dsh outliving its killed tmux, its main thread waiting for that thread);
- input is paced: at most :data:`PACE` events run ahead of the widget taking them. Textual's
  reader turned all the input there was into events at once; a flood of keystrokes (a paste
  without bracketing) queued hundreds of thousands of them (hundreds of megabytes), each
  taking the composer milliseconds, and the exit SIGTERM or SIGHUP asks for, queued behind
  them, waited for all of them (over six minutes). Now the rest waits in the terminal, and an
  exit comes after a few dozen keys at most.
"""

from __future__ import annotations

import codecs
import fcntl
import os
import selectors
import struct
import termios
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from textual import events
from textual.app import App
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

from dsh.tui.terminal_input import TerminalInput

READ_SIZE = 64 * 1024
PACE = 64
"""Input events posted to the app before the reader waits for the widget taking them to have
handled them."""
ASK_AGAIN = 1.0
"""Seconds after which the reader asks again whether the input has been handled (the widget it
asked may have gone)."""


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


def enters_typed_ahead(data: bytes, typed_ahead: int) -> bytes:
    """``data`` with each line feed among its first ``typed_ahead`` bytes (typed while the
    terminal was in its line mode, which turns enter into a line feed) made an enter again."""
    if typed_ahead <= 0:
        return data
    return data[:typed_ahead].replace(b"\n", b"\r") + data[typed_ahead:]


def waiting_input(fileno: int) -> int:
    """How many bytes the terminal holds for reading now (0 if it cannot say)."""
    try:
        found = fcntl.ioctl(fileno, termios.FIONREAD, struct.pack("i", 0))
    except OSError:
        return 0
    return int(struct.unpack("i", found)[0])


class InputPacer:
    """Posts input to ``app`` through ``send``, at most :data:`PACE` messages ahead of the
    widget taking them: after each ``pace`` messages, :meth:`post` returns only once that
    widget has handled them, or ``stopped`` is set.

    The app forwards a key to the focused widget's queue at once; so, after the input, the app
    is asked (through ``send`` too, so in order) to queue a callback at that widget, behind
    what it holds, and the callback says the input before it is handled. The question is asked
    again every :data:`ASK_AGAIN` seconds (the widget may have gone before answering)."""

    def __init__(
        self,
        app: App[Any],
        send: Callable[[Message], None],
        stopped: threading.Event,
        *,
        pace: int = PACE,
    ) -> None:
        self._app = app
        self._send = send
        self._stopped = stopped
        self._pace = pace
        self._unconfirmed = 0
        self.waiting = False
        """True while :meth:`post` waits for the app."""

    def post(self, message: Message) -> None:
        self._send(message)
        self._unconfirmed += 1
        if self._unconfirmed >= self._pace:
            self.waiting = True
            try:
                self._wait_for_app()
            finally:
                self.waiting = False
            self._unconfirmed = 0

    def _wait_for_app(self) -> None:
        handled = threading.Event()
        app = self._app

        def confirm() -> None:  # on the app's loop, after the input posted before it
            target = app.focused or app.screen  # where that input went
            if not target.call_later(handled.set):  # behind what it has queued
                handled.set()  # it is closing: nothing to wait for

        asked_at: float | None = None
        while not handled.is_set() and not self._stopped.is_set():
            if asked_at is None or time.monotonic() - asked_at >= ASK_AGAIN:
                self._send(events.Callback(callback=confirm))
                asked_at = time.monotonic()
            handled.wait(0.1)


class HangupSafeDriver(LinuxDriver):
    """Textual's POSIX terminal driver, writing through a :class:`TerminalStream`, reading
    pastes whole and input paced (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self._file is not None:  # Textual's file is typed as the stream it usually is
            self._file = TerminalStream(self._file)  # type: ignore[assignment]

    def _sigcont_application(self, *args: Any) -> None:
        """Restart the UI on SIGCONT only when SIGTSTP (ctrl+z) suspended it. The kernel sends
        SIGCONT with the SIGHUP of a closed terminal too; Textual restarted on any SIGCONT,
        which started a second input thread the shutdown did not wait for: one that then read
        the end of input waited forever, and dsh never exited."""
        if self._must_signal_resume:
            super()._sigcont_application(*args)

    def run_input_thread(self) -> None:
        """Read the terminal until the app stops taking input, posting what it means."""
        pacer = InputPacer(self._app, self.process_message, self.exit_event)
        reader = TerminalInput(pacer.post, debug=self._debug)
        decode = codecs.getincrementaldecoder("utf-8")(errors="backslashreplace").decode
        typed_ahead = waiting_input(self.fileno)  # the terminal is in raw mode by now
        with selectors.SelectSelector() as selector:  # as Textual's: others miss ttys on macOS
            selector.register(self.fileno, selectors.EVENT_READ)
            while not self.exit_event.is_set():
                if selector.select(reader.timeout(0.1)):
                    data = read_terminal(self.fileno)
                    if not data:  # the terminal is gone: nothing more will come
                        reader.finish()
                        self.process_message(TerminalGone())
                        return  # ended: no wait that a shutdown already past would never end
                    reader.feed(decode(enters_typed_ahead(data, typed_ahead)))
                    typed_ahead -= len(data)
                reader.tick()


class TerminalGone(Message):
    """The terminal's input ended: its other end has closed. The app quits as on SIGHUP, which
    the kernel does not send to every process that was reading the terminal (one whose
    SIGHUP is blocked, one outside the terminal's session, a race with the hangup)."""


def read_terminal(fileno: int) -> bytes:
    """What the terminal sent, or ``b""`` once it is gone (a read of a closed pty fails with
    ``EIO`` where a pipe would say end-of-file)."""
    try:
        return os.read(fileno, READ_SIZE)
    except OSError:
        return b""


def hangup_safe(driver_class: type[Driver]) -> type[Driver]:
    """The driver to run the UI with: :class:`HangupSafeDriver` in place of Textual's own
    terminal driver; any other (the headless one, one named by ``TEXTUAL_DRIVER``) as it is."""
    return HangupSafeDriver if driver_class is LinuxDriver else driver_class
