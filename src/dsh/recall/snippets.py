"""What a search hit shows of its message: about ``SNIPPET_CHARS`` around the hit, on one line,
found by offsets into the lower-cased text (the scan's) mapped back to the original's; and how
many hits fit in one answer (``Bound``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SNIPPET_CHARS = 200
"""About this many characters of context around a search hit."""


def snippet(text: str, lowered_at: int, lowered_length: int) -> str:
    """About ``SNIPPET_CHARS`` of ``text`` around the hit that is ``lowered_length`` long at
    ``lowered_at`` in ``text.lower()``."""
    position = _original_offset(text, lowered_at)
    length = _original_offset(text, lowered_at + lowered_length) - position
    pad = max(40, (SNIPPET_CHARS - length) // 2)
    start = max(0, position - pad)
    end = min(len(text), position + length + pad)
    body = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")


_TWO_WHEN_LOWERED = "\u0130"
"""'İ', the one character whose lower case is two characters long ('i' and a combining dot)."""


def _original_offset(text: str, lowered_offset: int) -> int:
    """The offset in ``text`` of offset ``lowered_offset`` of ``text.lower()``."""
    if _TWO_WHEN_LOWERED not in text:
        return lowered_offset
    lowered = 0
    for index, char in enumerate(text):
        if lowered >= lowered_offset:
            return index
        lowered += 2 if char == _TWO_WHEN_LOWERED else 1
    return len(text)


ANSWER_FRAME_CHARS = 800
"""What a search answer's header and closing line may take besides its hits and the query
(which the header repeats): the room for hits is the answer's bound less both."""


@dataclass(frozen=True, slots=True)
class Bound:
    """How many hits a search answer shows: at most ``limit``, and as many as fit in ``room``
    characters (None: no size bound), the first one always."""

    limit: int
    room: int | None = None

    def fitting(self, lines: Sequence[str], heading: tuple[int, int] | None = None) -> int:
        """How many of ``lines`` (hits, one per line, best first) fit; ``heading``: (the
        place of the line a heading goes before, that heading's length)."""
        used = 0
        for count, line in enumerate(lines[: self.limit]):
            used += len(line) + 1
            if heading is not None and count == heading[0]:
                used += heading[1] + 1
            if self.room is not None and count and used > self.room:
                return count
        return min(len(lines), self.limit)
