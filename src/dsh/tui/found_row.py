"""Which of a block's rows a find highlights: the row where the first match begins.

A find matches a block's text as the model or the user wrote it (``find.searchable``); the rows
show that text wrapped, decorated and, for an assistant reply in Markdown, rendered. So the
rows are read as one text, compared in three ways, each looser than the one before, and the
first that finds the needle names its row:

1. whitespace ignored: a needle that wrapping split over two rows (at a space, or inside a long
   word cut in two) is found where it begins; the marks in front of continuation rows are
   spaces;
2. letters and digits only: the reasoning bar (``┊``) in front of every reasoning row, and
   Markdown markup that the rendering drops or redraws (``**``, backticks, ``#``, a link's
   brackets, ``-`` bullets drawn as ``•``, a quote's bar, a table's frame), are not compared;
3. the longest start of that needle, down to half of it (at least three characters): rendering
   can also change the letters themselves (``&amp;`` shown as ``&``, a footnote renumbered), and
   then no exact mapping exists; the row where the needle's beginning is found is the nearest.

Failing all three (a needle with no letter or digit, say), it is the block's first row. The
looser comparisons can also name an earlier row holding the same letters differently spaced or
punctuated; the highlight then sits on a near row of the same block, never on another block.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence

from rich.segment import Segment

SHORTEST_START = 3
"""The fewest characters of a needle's start that the last comparison looks for."""


def _not_space(char: str) -> bool:
    return not char.isspace()


def _row_text(row: Sequence[Segment]) -> str:
    return "".join(segment.text for segment in row)


def _kept(text: str, keep: Callable[[str], bool]) -> str:
    return "".join(char for char in text.casefold() if keep(char))


class _Read:
    """The rows read as one text of only the characters ``keep`` keeps (case-folded), with
    where each row starts in it."""

    def __init__(self, rows: Sequence[Sequence[Segment]], keep: Callable[[str], bool]) -> None:
        self.starts: list[int] = []
        parts: list[str] = []
        length = 0
        for row in rows:
            self.starts.append(length)
            part = _kept(_row_text(row), keep)
            parts.append(part)
            length += len(part)
        self.text = "".join(parts)

    def row_of(self, key: str) -> int:
        """The row holding the first character of ``key``'s first occurrence; -1 if none."""
        at = self.text.find(key) if key else -1
        return bisect_right(self.starts, at) - 1 if at >= 0 else -1


def first_row_with(rows: Sequence[Sequence[Segment]], needle: str) -> int:
    """The index of the row where the first match of ``needle`` begins (case-insensitive;
    see the module's docstring for what counts as a match), else 0."""
    row = _Read(rows, _not_space).row_of(_kept(needle, _not_space))
    if row >= 0:
        return row
    key = _kept(needle, str.isalnum)
    if not key:
        return 0
    letters = _Read(rows, str.isalnum)
    shortest = min(len(key), max(SHORTEST_START, len(key) // 2))
    for length in range(len(key), shortest - 1, -1):
        if (row := letters.row_of(key[:length])) >= 0:
            return row
    return 0
