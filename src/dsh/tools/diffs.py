"""Unified diffs of file edits, the way people review them.

``edit_file`` (and ``write_file`` over an existing text file) logs the diff of what it changed
in its result's meta (``meta["diff"]``: the
lines of a unified diff of the file, ``--- a/…``/``+++ b/…`` headers and ``@@ … @@`` hunks,
no newlines), so a tool card shows the file's real line numbers and indentation, not the
arguments alone, after the file has moved on. The faces colour and lay the lines out.
"""

from __future__ import annotations

import difflib

CONTEXT_LINES = 3
DIFF_META = "diff"
"""The key of a result's meta that holds its diff lines."""
MAX_DIFF_CHARS = 256 * 1024
"""Files larger than this on either side get no logged diff (difflib's time grows faster than
the file; the card then shows the arguments' diff)."""


def unified_diff(
    path: str, before: str, after: str, *, context: int = CONTEXT_LINES
) -> list[str] | None:
    """The lines of a unified diff of ``before`` → ``after`` (``path`` names both sides), or
    None for a side over ``MAX_DIFF_CHARS``."""
    if len(before) > MAX_DIFF_CHARS or len(after) > MAX_DIFF_CHARS:
        return None
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        f"a/{path}",
        f"b/{path}",
        n=context,
        lineterm="\n",
    )
    return [line.rstrip("\n") for line in lines]
