"""The CLI's warnings on stderr: ``dsh: warning: …``, one line each, whoever raised them.

A warning's text often quotes what dsh did not write itself: a session's title, a server's
reply, a file's name, a line of a log. So every warning line is made as
``dsh.errors.error_line`` makes an error's text: white space flattened to one line, a character
that does not print (a terminal escape, a bell) shown as its escape, never sent to the terminal,
and cut at ``dsh.errors.WARNING_LINE_CHARS``, as the terminal UI shows them
(``dsh.tui.app_warnings``). The logged warnings of ``dsh.*`` (``print_to_stderr``) and the
commands' own (``dsh.cli.context.warn``) alike.

A face that is about to cover the terminal (the terminal UI) holds the warnings of its start
(``HeldWarnings``) and shows them itself, where a line printed now would be hidden at once.

A command that also reports them elsewhere (``dsh run --json-stream``, on stdout) taps the lines
(``tapped``): each warning or error line printed on stderr, the commands' own and the logged
ones alike, is given to it as it is printed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

from dsh.errors import WARNING_LINE_CHARS, error_line

Tap = Callable[[str, str], None]
"""Given ``(level, text)`` of each line printed on stderr: ``warning`` or ``error``, and the
line's text after its ``dsh: LEVEL: `` prefix."""

_taps: list[Tap] = []


def warning_line(message: str, level: str = "warning") -> str:
    """``message`` as the one line the CLI prints for it (``dsh: warning: …``)."""
    return f"dsh: {level}: {line_text(message)}"


def line_text(message: str) -> str:
    """``message`` as its line shows it, after the ``dsh: LEVEL: `` prefix."""
    return error_line(message, WARNING_LINE_CHARS)


@contextlib.contextmanager
def tapped(tap: Tap) -> Iterator[None]:
    """Inside, every warning or error line printed on stderr (``told``: the commands' own;
    ``print_to_stderr``: the logged ones it prints) is also given to ``tap``."""
    _taps.append(tap)
    try:
        yield
    finally:
        _taps.remove(tap)


def told(level: str, text: str) -> None:
    """A line of ``level`` was printed on stderr (``text``: after its prefix): tell the taps."""
    for tap in list(_taps):
        tap(level, text)


class OneLineFormatter(logging.Formatter):
    """A log record as ``warning_line`` makes it, named by its level (``dsh: error: …``)."""

    def format(self, record: logging.LogRecord) -> str:
        return warning_line(record.getMessage(), record.levelname.lower())


class _StderrPrinter(logging.StreamHandler):  # type: ignore[type-arg]
    """Prints a record as its one line on stderr, and tells the taps (``tapped``) of it."""

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        told(record.levelname.lower(), line_text(record.getMessage()))


def print_to_stderr() -> None:
    """``dsh.*`` warnings (and worse) go to stderr, one line each; the terminal UI shows them
    itself while it runs (``dsh.tui.app_warnings`` silences this handler then)."""
    printed: set[str] = set()

    def once(record: logging.LogRecord) -> bool:
        """A configuration warning the command already printed is not printed again (one
        command may read the same configuration twice); other warnings all print."""
        if record.name != "dsh.config":
            return True
        line = record.getMessage()
        if line in printed:
            return False
        printed.add(line)
        return True

    handler = _StderrPrinter()
    handler.setFormatter(OneLineFormatter())
    handler.addFilter(once)
    root = logging.getLogger("dsh")
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    root.propagate = False


class _Holder(logging.Handler):
    """Keeps the records of ``dsh.*`` it is given, in order."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class _Silenced(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


class HeldWarnings:
    """``with HeldWarnings() as held:`` ``dsh.*`` warnings logged inside the block are not
    printed on stderr (``print_to_stderr``) but kept, for the caller to show itself
    (``held.lines``). If the block raises, they print as usual, before its error does.
    ``held.paused()`` lets them through for a while."""

    def __init__(self) -> None:
        self._logger = logging.getLogger("dsh")
        self._holder = _Holder()
        self._silent = _Silenced()
        self._printers: list[logging.Handler] = []

    def __enter__(self) -> HeldWarnings:
        self._hold()
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._let_go()
        if kind is not None:
            self._print_held()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Warnings print as usual inside (another app, which shows its own, runs), and the
        ones held so far are printed first (that app shows only what it sees)."""
        self._let_go()
        self._print_held()
        try:
            yield
        finally:
            self._hold()

    def _print_held(self) -> None:
        for record in self._holder.records:
            for printer in self._printers:
                printer.handle(record)
        self._holder.records.clear()

    @property
    def lines(self) -> list[str]:
        """The messages held, in order, each once (as the printer says a repeated
        configuration warning once)."""
        return list(dict.fromkeys(record.getMessage() for record in self._holder.records))

    def _hold(self) -> None:
        self._printers = [
            handler
            for handler in self._logger.handlers
            if isinstance(handler, logging.StreamHandler)
            and not isinstance(handler, logging.FileHandler)
        ]
        for printer in self._printers:  # first: the printer's own filter (``once``) must not
            printer.filters.insert(0, self._silent)  # count a line it did not print
        self._logger.addHandler(self._holder)

    def _let_go(self) -> None:
        self._logger.removeHandler(self._holder)
        for printer in self._printers:
            printer.removeFilter(self._silent)
