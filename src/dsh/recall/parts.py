"""Long rendered messages in parts, paged (docs/compaction.md, "The two recall tools").

A message of a rendered span longer than ``PART_CHARS`` becomes several messages of the span,
each its own ``#msg``: ``history_read`` pages through it, and a ``history_search`` hit names the
part that holds it. The split is a pure function of the text (constants, not configuration), so
message numbers depend on the log alone.
"""

from __future__ import annotations

PART_CHARS = 6000
"""A rendered message longer than this is split into parts, each its own message of the span
(its own ``#msg``): a page holds at least one whole, and a search hit names the part that holds
it. A constant, so message numbers depend on the log alone, never on the configuration."""
PART_BREAK_ZONE = PART_CHARS // 5
"""A part ends at the last line break in its final fifth when there is one, else at
``PART_CHARS`` exactly — and then the next part repeats the last ``PART_OVERLAP`` characters, so
a literal shorter than that which straddles the cut is still found whole in one part."""
PART_OVERLAP = 200
CONTINUED = "\n[continued in the next message]"


def split_parts(text: str) -> tuple[str, ...]:
    """``text`` in parts of at most ``PART_CHARS`` characters (plus their markers): every part
    but the last ends with ``CONTINUED``, every part but the first starts with ``[part k of n]``;
    a part cut inside a line is followed by one that starts ``PART_OVERLAP`` characters back."""
    if len(text) <= PART_CHARS:
        return (text,)
    pieces, start = [], 0
    while len(text) - start > PART_CHARS:
        end = start + PART_CHARS
        newline = text.rfind("\n", end - PART_BREAK_ZONE, end)
        pieces.append(text[start : newline + 1 if newline >= 0 else end])
        start = newline + 1 if newline >= 0 else end - PART_OVERLAP
    pieces.append(text[start:])
    count = len(pieces)
    return tuple(
        (f"[part {number} of {count}]\n" if number > 1 else "")
        + piece
        + (CONTINUED if number < count else "")
        for number, piece in enumerate(pieces, start=1)
    )
