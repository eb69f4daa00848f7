"""File edits as people review them: a coloured unified diff (before → after) of an
``edit_file`` or ``write_file`` call, instead of its JSON arguments.

With the workspace at hand (the approval prompt, before the call runs) the diff is of the
real file: its current text against the text the call would leave, or none when the call
would fail (``dsh.tools.planned_change``; the approval says why instead). A tool card, drawn
after the fact, shows the diff its result logged (``dsh.tools.diffs``: the real lines, numbers
and indentation); without one (before the result, an older log) the diff is of the arguments
alone: ``old`` → ``new``, or an empty file → ``content``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.style import Style

from dsh.tools.planned_change import planned_diff
from dsh.tui.wrap import sanitize

ADDED = Style(color="green")
REMOVED = Style(color="red")
HUNK = Style(color="cyan")
HEADER = Style(bold=True)
NOTE = Style(dim=True)
"""``\\ No newline at end of file`` under the line it speaks of."""


@dataclass(frozen=True, slots=True)
class FileDiff:
    path: str
    lines: tuple[str, ...]
    """Unified diff lines, headers included (``--- a/…``, ``+++ b/…``, ``@@ … @@``)."""
    added: int
    removed: int
    headers: int = 0
    """How many leading lines are file headers (before the first ``@@``): a removed line that
    starts ``--`` or an added one that starts ``++`` is not one."""

    @property
    def summary(self) -> str:
        return f"{self.path} +{self.added} -{self.removed}"


def line_style(line: str, *, header: bool = False) -> Style | None:
    if header:
        return HEADER
    if line.startswith("@@"):
        return HUNK
    if line.startswith("\\"):
        return NOTE
    if line.startswith("+"):
        return ADDED
    if line.startswith("-"):
        return REMOVED
    return None


def parse_arguments(arguments: str) -> dict[str, Any] | None:
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def call_diff(tool: str, args: dict[str, Any], workspace: Path | None = None) -> FileDiff | None:
    """The diff an ``edit_file`` / ``write_file`` call makes; None for other tools,
    arguments that name no edit, a call that would fail, or a file too large to diff."""
    lines = planned_diff(tool, args, workspace)
    return None if lines is None else logged_diff(str(args["path"]), tuple(lines))


def logged_diff(path: str, lines: tuple[str, ...]) -> FileDiff:
    """The diff a result logged, made safe for a terminal (a line's sign kept apart from its
    text, so a tab in it expands as it does in the file), and its path (the call's)."""
    return _file_diff(sanitize(path), [sanitize(line[:1]) + sanitize(line[1:]) for line in lines])


def _file_diff(path: str, lines: list[str]) -> FileDiff:
    headers = next((i for i, line in enumerate(lines) if line.startswith("@@")), len(lines))
    body = lines[headers:]
    added = sum(1 for line in body if line.startswith("+"))
    removed = sum(1 for line in body if line.startswith("-"))
    return FileDiff(path, tuple(lines), added, removed, headers)
