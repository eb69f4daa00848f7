"""A Markdown table in a reply, drawn so that every cell can be read.

A table whose columns fit the width (each at least as wide as its longest word) is Rich's, as
before: its cells wrap on spaces. One that does not fit (many columns, long words) would have
each cell cut to ``colum…``, and the transcript does not scroll sideways: it is drawn as
records instead, one per row, each cell on a line of its own under its column's heading
(``heading  value``), as a phone shows a wide table.
"""

from __future__ import annotations

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import TableElement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

UNBOUNDED = 1_000_000
"""The width a table is measured in (a narrower one would cap what it says it needs)."""
RECORD_GAP = 2
"""Cells between a record's headings and its values."""
STACKED_BELOW = 12
"""Narrower than this, a record's values go under their headings instead of beside them."""


class WrappingTableElement(TableElement):
    """Rich's Markdown table, or its rows as records when its columns do not fit."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = self._table()
        unbounded = options.update_width(UNBOUNDED)
        if table.__rich_measure__(console, unbounded).minimum <= options.max_width:
            yield table
            return
        yield from self._records(console, options)

    def _headings(self) -> list[Text]:
        if self.header is None or self.header.row is None:
            return []
        return [cell.content for cell in self.header.row.cells]

    def _rows(self) -> list[list[Text]]:
        if self.body is None:
            return []
        return [[cell.content for cell in row.cells] for row in self.body.rows]

    def _table(self) -> Table:
        """The table Rich's ``TableElement`` draws (its cells fold a word wider than the
        column, should one be, rather than cut it)."""
        table = Table(
            box=box.SIMPLE,
            pad_edge=False,
            style="markdown.table.border",
            show_edge=True,
            collapse_padding=True,
        )
        for column in self._headings():
            heading = column.copy()
            heading.stylize("markdown.table.header")
            table.add_column(heading, overflow="fold")
        for row in self._rows():
            table.add_row(*row)
        return table

    def _records(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Each row as lines of ``heading  value``, a blank line between rows; the headings
        take at most a third of the width, a value wraps under itself (in a very narrow
        width, each value on lines of its own under its heading)."""
        headings = self._headings()
        rows = self._rows() or [[Text("") for _ in headings]]
        widest = max((heading.cell_len for heading in headings), default=0)
        key_width = max(1, min(widest, options.max_width // 3))
        for number, row in enumerate(rows):
            if number:
                yield Segment.line()
            if options.max_width < STACKED_BELOW:  # no room beside: the value under its heading
                for heading, value in zip(headings, row, strict=False):
                    key = heading.copy()
                    key.stylize("markdown.table.header")
                    yield key
                    yield value
                continue
            grid = Table.grid(padding=(0, RECORD_GAP, 0, 0))
            grid.add_column(width=key_width, overflow="fold")
            grid.add_column(overflow="fold", ratio=1)
            for heading, value in zip(headings, row, strict=False):
                key = heading.copy()
                key.stylize("markdown.table.header")
                grid.add_row(key, value)
            yield grid
