"""The rows a running tool card shows under ``running… N s``: the last lines its command
printed (``dsh.agent.tool_progress``), dim, each cut to the card's width, not wrapped (a long
line ends in "…"), escapes made visible as in a result (``sanitize``)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len, chop_cells
from rich.segment import Segment
from rich.style import Style

from dsh.tui.wrap import sanitize

INDENT = "      "
DIM = Style(dim=True)


def cut_line(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells, ending in "…" when something was cut."""
    if cell_len(text) <= width:
        return text
    return chop_cells(text, max(1, width - 1))[0] + "…"


def tail_rows(lines: Sequence[str], width: int) -> list[list[Segment]]:
    """One row per line of ``lines`` (already masked) as the card shows it at ``width``."""
    room = max(width - len(INDENT), 8)
    return [[Segment(INDENT), Segment(cut_line(sanitize(line), room), DIM)] for line in lines]
