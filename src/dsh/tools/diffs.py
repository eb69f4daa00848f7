"""Unified diffs of file edits, the way people review them.

``edit_file`` (and ``write_file`` over an existing text file) logs the diff of what it changed
in its result's meta (``meta["diff"]``: the
lines of a unified diff of the file, ``--- a/…``/``+++ b/…`` headers and ``@@ … @@`` hunks,
no newlines), so a tool card shows the file's real line numbers and indentation, not the
arguments alone, after the file has moved on. The faces colour and lay the lines out.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from dsh.config.small_file import UnreadableFile, read_small_file

CONTEXT_LINES = 3
DIFF_META = "diff"
"""The key of a result's meta that holds its diff lines."""
MAX_DIFF_CHARS = 256 * 1024
"""Files larger than this on either side get no logged diff (difflib's time grows faster than
the file; the card then shows the arguments' diff)."""
MAX_DIFF_LINES = 10_000
"""Nor files of more lines than this: many short repeated lines cost difflib far more than
their characters suggest (87k lines of three characters took 23 s)."""


NO_NEWLINE = "\\ No newline at end of file"
"""The line after a diff line that ends its side's file without a newline (as ``diff -u`` and
git write it): a change of the final newline alone is then visible, not ``-b`` / ``+b``."""


def unified_diff(
    path: str, before: str, after: str, *, context: int = CONTEXT_LINES, created: bool = False
) -> list[str] | None:
    """The lines of a unified diff of ``before`` → ``after`` (``path`` names both sides; the
    old one is ``/dev/null`` for a file ``created``, as git writes it), or None for a side over
    ``MAX_DIFF_CHARS``."""
    if len(before) > MAX_DIFF_CHARS or len(after) > MAX_DIFF_CHARS:
        return None
    old, new = split_lines(before), split_lines(after)
    if len(old) > MAX_DIFF_LINES or len(new) > MAX_DIFF_LINES:
        return None
    lines = difflib.unified_diff(
        old,
        new,
        "/dev/null" if created else f"a/{path}",
        f"b/{path}",
        n=context,
        lineterm="\n",
    )
    result: list[str] = []
    for line in lines:  # headers and hunk lines end in a newline; a file's last line may not
        result.append(line.rstrip("\n"))
        if not line.endswith("\n"):
            result.append(NO_NEWLINE)
    return result


def split_lines(text: str) -> list[str]:
    """``text``'s lines with their newlines, split at ``\\n`` only (as the tools count lines:
    a form feed or a Unicode line separator inside a line does not end it)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


DIFF_TOOLS = frozenset({"edit_file", "write_file"})
"""The tools whose calls and results show as a file diff."""


def read_small_text(path: Path) -> str | None:
    """A regular file's UTF-8 text (line endings as stored), or None when it cannot be read,
    is not text, is not a regular file, or is too large to diff (checked before reading: a
    huge file is never loaded just to be left out). Read as a small file
    (:mod:`dsh.config.small_file`): a FIFO or a device would block or never end."""
    try:
        return read_small_file(path, MAX_DIFF_CHARS * 4).decode("utf-8")  # 4 bytes a character
    except (UnreadableFile, UnicodeDecodeError):
        return None
