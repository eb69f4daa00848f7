"""The end of what a running command printed so far, as the faces show it under its card.

The ``bash`` tool's reader (``dsh.tools.shell.CappedOutput``) feeds it the text it keeps as a
terminal would show it (``dsh.tools.terminal_text``: escape sequences dropped, carriage returns
and backspaces applied), the completed lines and the line in progress apart. It is transient:
nothing of it is logged (the call's result is, once, as before), and it keeps at most about
``KEEP_CHARS`` characters (the last reads that hold them), so a command printing without end
costs it no copy of what it reads: a read is appended, the oldest dropped.

``lines`` is what a face shows: the last ``SHOWN_LINES`` lines, each cut to ``LINE_CHARS``,
with every known secret value masked as in the logged result (``SecretPolicy.mask``), every
control character but the tab shown as its escape (``printable_text``), and never a part of a
secret value the mask would not recognise: the start moves past a value it would cut (and past
what may be the rest of one the bound cut), and an end that may be the beginning of a value
still arriving waits for the next read (``held_back``: a line in progress ending in ``t`` waits
for its next character when a key begins with ``t``). ``version`` counts the feeds, so a
reader computes the lines again only when they may have changed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from dsh.tools.secrets import SecretPolicy
from dsh.tools.terminal_text import printable_text

KEEP_CHARS = 65_536
"""What is kept of the completed lines at least (and at most that and one read more)."""
SHOWN_LINES = 8
"""How many of the last lines a face shows."""
LINE_CHARS = 400
"""Each shown line is cut to this many characters (a face cuts it to its width)."""


def held_back(text: str, secrets: SecretPolicy) -> int:
    """How many characters at the end of ``text`` may be the beginning of a secret value whose
    rest has not been read yet (0: none)."""
    held = 0
    for _, value in secrets.values:
        for size in range(min(len(value) - 1, len(text)), held, -1):
            if text.endswith(value[:size]):
                held = size
                break
    return held


class OutputTail:
    """The end of one running call's output (see above)."""

    def __init__(
        self, secrets: SecretPolicy | None = None, on_change: Callable[[], None] | None = None
    ) -> None:
        self._secrets = secrets or SecretPolicy()
        self._on_change = on_change
        self._done: deque[str] = deque()
        """The completed lines kept (each ending in a newline), as read: the reads that hold
        the last ``KEEP_CHARS`` characters (joined only when shown)."""
        self._size = 0
        self._pending = ""
        """The line in progress, as shown."""
        self._cut = False
        """The start of ``_done`` was cut away."""
        self.version = 0
        """How many times the output grew (0: nothing printed yet)."""

    def feed(self, done: str, pending: str) -> None:
        """The reader read more: ``done`` the lines it completed, ``pending`` the line in
        progress now."""
        if not done and pending == self._pending:
            return
        if done:
            kept = self._done
            kept.append(done)
            self._size += len(done)
            while self._size - len(kept[0]) >= KEEP_CHARS:
                self._size -= len(kept.popleft())
                self._cut = True
        self._pending = pending
        self.version += 1
        if self._on_change is not None:
            self._on_change()

    def lines(self) -> tuple[str, ...]:
        """The last lines as a face shows them (see above); none before the command printed."""
        secrets = self._secrets
        text = "".join(self._done) + self._pending
        if secrets.values:
            text = text[: len(text) - held_back(text, secrets)]
        if text.endswith("\n"):
            text = text[:-1]  # the last line is complete: no empty line in progress under it
        at = len(text)
        for _ in range(SHOWN_LINES):
            at = text.rfind("\n", 0, at)
            if at < 0:
                break
        start = at + 1
        if secrets.values:
            if self._cut:  # what the bound left of a value is no value the mask knows
                start = max(start, min(secrets.longest - 1, len(text)))
            start = secrets.safe_cut(text, start, keep="tail")
        if start >= len(text):
            return ()
        shown = printable_text(secrets.mask(text[start:]))
        return tuple(line[:LINE_CHARS] for line in shown.split("\n")[-SHOWN_LINES:])
