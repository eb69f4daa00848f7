"""dsh's warnings while the terminal UI owns the terminal: a toast each, listed by ``/warnings``.

Outside the UI every ``dsh.*`` warning is one line on stderr (``ConsoleScript`` in
``dsh.cli.main`` installs that handler). While the app runs, Textual draws on the same
terminal: a line written there lands over the UI and the next repaint wipes it. So for exactly
the span of its run (``run``, ``run_async``, and ``run_test`` for the tests) a ``WarningsApp``:

- silences the stream handlers on the ``dsh`` logger (that stderr printer) and adds a
  ``WarningRouter`` in their place;
- the router takes a record from any thread without making it wait (the MCP thread must never
  wait for the UI) and wakes the app, which shows it as a toast with its severity (warning or
  error) and keeps it in a ``WarningLog`` for ``/warnings``;
- identical warnings coalesce into one entry with a count and the times of the first and the
  last; a repeat while its toast is still up only counts, a later one shows again with the count;
- a failure the app already shows as an error of its own (a turn's internal error, noted in the
  transcript; its record carries ``dsh.errors.SHOWN_AS_ERROR``) is listed with no toast: it
  shows once;
- what the app could not show (raised while it was starting, or already closing) is printed by
  the silenced handlers once the run is over, one line each as before.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from textual import events, on
from textual.app import App
from textual.message import Message
from textual.notifications import SeverityLevel

from dsh.errors import WARNING_LINE_CHARS, error_line, shown_as_error

if TYPE_CHECKING:
    from textual.pilot import Pilot  # Textual imports it for run_test, not to run the app

DSH_LOGGER = "dsh"
TOAST_SECONDS = 10.0
"""How long a warning's toast stays up; a repeat within it only adds to the count."""
Returns = TypeVar("Returns")
"""What the app's run returns (``DshApp``: nothing; the picker: the chosen session's id)."""
MAX_KEPT = 200
"""Distinct warnings ``/warnings`` keeps; older ones are dropped (and counted)."""


def one_line(record: logging.LogRecord) -> str:
    """The record's message on one line, a terminal escape in it shown as its escape, as the
    stderr printer writes it (Textual would send an escape in a toast to the terminal as is)."""
    return error_line(record.getMessage(), WARNING_LINE_CHARS)


def clock(at: float) -> str:
    """A wall-clock time of day, as ``/warnings`` lists it."""
    return time.strftime("%H:%M:%S", time.localtime(at))


@dataclass(slots=True)
class ShownWarning:
    """One distinct warning of this run and how often it came."""

    level: str
    """``warning``, ``error`` or ``critical``."""
    text: str
    first: float
    last: float
    count: int = 1
    toast_until: float = 0.0
    """Until when (monotonic seconds) its last toast is up."""

    @property
    def severity(self) -> SeverityLevel:
        return "warning" if self.level == "warning" else "error"

    def toast(self) -> str:
        times = f" ({self.count} times)" if self.count > 1 else ""
        return f"{self.level}: {self.text}{times}"

    def row(self) -> str:
        again = f" ({self.count} times, last at {clock(self.last)})" if self.count > 1 else ""
        return f"{clock(self.first)} {self.level}: {self.text}{again}"


class WarningLog:
    """This run's warnings in the order they first came, identical ones coalesced."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], ShownWarning] = {}
        self.dropped = 0

    @property
    def entries(self) -> list[ShownWarning]:
        return list(self._entries.values())

    def add(self, record: logging.LogRecord, text: str) -> ShownWarning:
        """Count ``record`` (whose message is ``text``, on one line) in."""
        level = record.levelname.lower()
        entry = self._entries.get((level, text))
        if entry is not None:
            entry.count += 1
            entry.last = record.created
            return entry
        if len(self._entries) >= MAX_KEPT:
            del self._entries[next(iter(self._entries))]
            self.dropped += 1
        entry = self._entries[level, text] = ShownWarning(
            level, text, record.created, record.created
        )
        return entry

    def text(self) -> str:
        """The ``/warnings`` answer."""
        if not self._entries:
            return "No warnings or errors since the UI started."
        rows = [entry.row() for entry in self._entries.values()]
        if self.dropped:
            rows.insert(0, f"({self.dropped} older ones dropped)")
        return "\n".join(["Warnings and errors since the UI started:", *rows])


class WarningsPending(Message):
    """Records wait in the router (posted from any thread)."""


class Silenced(logging.Filter):
    """Lets no record through (the stderr printer's, while the UI owns the terminal)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


class WarningRouter(logging.Handler):
    """Holds dsh's records from any thread until the app shows them; wakes the app without
    waiting for it."""

    def __init__(self, app: WarningsApp[Any]) -> None:
        super().__init__(logging.WARNING)
        self._app = app
        self._pending: list[tuple[logging.LogRecord, str]] = []
        """Records not shown yet, each with its message on one line."""
        self._guard = threading.Lock()
        self.showing = False
        """Set by the app while it can show a toast (mounted, not yet closing)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = one_line(record)  # a message that cannot be formatted is logging's to report
        except Exception:
            self.handleError(record)
            return
        with self._guard:
            woken = bool(self._pending)  # the app takes them all at once: one wake is enough
            self._pending.append((record, text))
        if self.showing and not woken:
            with contextlib.suppress(RuntimeError):  # the loop closed: printed after the run
                self._app.post_message(WarningsPending())

    def take(self) -> list[tuple[logging.LogRecord, str]]:
        with self._guard:
            taken, self._pending = self._pending, []
        return taken

    @contextlib.contextmanager
    def routed(self) -> Iterator[None]:
        """dsh's records come here instead of the stderr printer; the ones never shown are
        printed by it afterwards."""
        logger = logging.getLogger(DSH_LOGGER)
        printers = [
            handler
            for handler in logger.handlers
            if isinstance(handler, logging.StreamHandler)
            and not isinstance(handler, logging.FileHandler)
        ]
        silent = Silenced()
        for printer in printers:  # first: the CLI's once-filter must not count what it holds
            printer.filters.insert(0, silent)
        logger.addHandler(self)
        try:
            yield
        finally:
            logger.removeHandler(self)
            for printer in printers:
                printer.removeFilter(silent)
            for record, _ in self.take():
                for printer in printers:
                    printer.handle(record)


class WarningsApp(App[Returns]):
    """An app that shows dsh's warnings inside it while it runs (see the module's docstring).

    Its toasts (these and any other) show at the top right, over the oldest lines on screen,
    not over the prompt the person is typing in. Apps run one after the other (``dsh
    --resume``'s picker, then the UI) share one ``WarningLog``: what the first showed is listed
    by the second's ``/warnings``."""

    DEFAULT_CSS = """
    Screen > ToastRack {
        dock: top;
        align: right top;
        margin-bottom: 0;
    }
    """

    def __init__(self, warnings: WarningLog | None = None) -> None:
        super().__init__()
        self.warnings = warnings if warnings is not None else WarningLog()
        self._router = WarningRouter(self)

    async def run_async(self, *args: Any, **kwargs: Any) -> Returns | None:
        with self._router.routed():
            return await super().run_async(*args, **kwargs)

    @contextlib.asynccontextmanager
    async def run_test(self, *args: Any, **kwargs: Any) -> AsyncIterator[Pilot[Returns]]:
        with self._router.routed():
            async with super().run_test(*args, **kwargs) as pilot:
                yield pilot

    @on(events.Mount)
    def _show_warnings_from_now(self) -> None:
        for entry in self.warnings.entries:  # an earlier app's toasts went with it
            entry.toast_until = 0.0
        self._router.showing = True
        self.show_pending_warnings()

    @on(events.Unmount)
    def _print_warnings_from_now(self) -> None:
        self._router.showing = False

    def on_warnings_pending(self, _: WarningsPending) -> None:
        self.show_pending_warnings()

    def show_pending_warnings(self) -> None:
        """A toast for each new warning (not for one whose toast is still up, nor for a failure
        the app shows as an error of its own), and each kept for ``/warnings``."""
        if not self._router.showing or self.return_code is not None:
            return  # closing (``exit`` was called): printed after the run
        for record, text in self._router.take():
            entry = self.warnings.add(record, text)
            if shown_as_error(record):
                continue
            now = time.monotonic()
            if now < entry.toast_until:
                continue
            entry.toast_until = now + TOAST_SECONDS
            self.notify(entry.toast(), severity=entry.severity, timeout=TOAST_SECONDS, markup=False)
