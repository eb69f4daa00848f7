"""The CLI's warnings on stderr: ``dsh: warning: …``, one line each, whoever raised them.

A warning's text often quotes what dsh did not write itself: a session's title, a server's
reply, a file's name, a line of a log. So every warning line is made as
``dsh.errors.error_line`` makes an error's text: white space flattened to one line, a character
that does not print (a terminal escape, a bell) shown as its escape, never sent to the terminal,
and cut at ``dsh.errors.WARNING_LINE_CHARS``, as the terminal UI shows them
(``dsh.tui.app_warnings``). The logged warnings of ``dsh.*`` (``print_to_stderr``) and the
commands' own (``dsh.cli.context.warn``) alike.
"""

from __future__ import annotations

import logging

from dsh.errors import WARNING_LINE_CHARS, error_line


def warning_line(message: str, level: str = "warning") -> str:
    """``message`` as the one line the CLI prints for it (``dsh: warning: …``)."""
    return f"dsh: {level}: {error_line(message, WARNING_LINE_CHARS)}"


class OneLineFormatter(logging.Formatter):
    """A log record as ``warning_line`` makes it, named by its level (``dsh: error: …``)."""

    def format(self, record: logging.LogRecord) -> str:
        return warning_line(record.getMessage(), record.levelname.lower())


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

    handler = logging.StreamHandler()
    handler.setFormatter(OneLineFormatter())
    handler.addFilter(once)
    root = logging.getLogger("dsh")
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    root.propagate = False
