"""The layout under the transcript view: a virtual list of blocks drawn with Textual's Line API.

Nothing is mounted per item: the layout keeps its blocks (``TranscriptModel``), a height per
block and the prefix sums of those heights, and ``render_line`` turns only the rows on screen
into strips (the rows of recently drawn blocks are cached).

Opening a session lays out nothing but the screen: every block starts with a cheap height
estimate (exact for collapsed cards and markers), and the blocks on and around the screen are
measured before they are drawn. A transcript of up to ``SYNC_MEASURE_LIMIT`` estimated blocks
is then measured whole at once; one of up to ``BACKGROUND_MEASURE_LIMIT`` is measured whole
too, by a worker on the event loop, ``MEASURE_SLICE`` blocks at a time with the app's events
handled between two, and given its heights at once (``measuring`` meanwhile): at once, its
~1,200 Markdown replies held the event loop, and a resumed session's composer, for half a
second of CPU. In a longer one a block keeps its
estimate until it comes within a screen of the screen (measuring all of a 100k-event session
took ~17 s of CPU, for rows that are mostly never looked at). Live events append blocks that
are measured at once; a burst of them is published (size, scroll, repaint) once.

Invariants:

* every row drawn belongs to a measured block: scrolling and content changes measure what they
  bring near the screen (``_measure_viewport``), and drawing measures whatever is still
  estimated on screen (a taller terminal) before it draws;
* selecting a block measures a screen's height around it first, so scrolling to a card
  several screens away lands where its measured neighbours put it;
* when estimates are replaced by measurements, the row at the top of the screen stays where it
  is (the anchor: its block and the rows of it above the screen), so the text on screen does
  not move; ``scroll_y`` and the scrollbar follow the new heights above it, and the scroll
  extent (``virtual_size``) is the sum of the current heights, estimates included. A view that
  follows the end stays at the end instead;
* the rows on screen are therefore the rows the fully measured layout shows from the same
  anchor: estimates change where a block is, never what is drawn of it.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Mapping
from itertools import accumulate

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from dsh.transcript import PassDetails
from dsh.tui.blocks import (
    Block,
    Row,
    TranscriptModel,
    block_rows,
    estimated_height,
    live_rows,
)
from dsh.tui.found_row import first_row_with
from dsh.tui.live_tail import WaitingPrompt, waiting_prompt_rows

SYNC_MEASURE_LIMIT = 200
"""Up to this many estimated blocks are measured at once (under ~0.1 s of CPU)."""
BACKGROUND_MEASURE_LIMIT = 2000
"""Up to this many are measured a slice at a time after that; more are measured as they come
near the screen."""
MEASURE_SLICE = 40
"""Blocks measured between two turns of the event loop (~15 ms of Markdown replies)."""
ROW_CACHE_BLOCKS = 256
SELECTED = Style(color="cyan", bold=True)
FOUND = Style(reverse=True)

Anchor = tuple[int, int] | None
"""(index of the block at the top of the screen, rows of it above the screen), or None."""


class TranscriptLayout(ScrollView):
    """Heights, offsets, measuring and drawing of the transcript's blocks; what the blocks are
    and how people move through them is ``TranscriptView``'s."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = TranscriptModel()
        self.details: Mapping[str, PassDetails] = {}
        self.show_reasoning = False
        self._selected: int | None = None
        self.chosen = False
        """The selected card was chosen (``up``/``down``, a click), not marked by ctrl+o."""
        self.found: tuple[int, int] | None = None
        """(block, row) of a find's match, highlighted."""
        self.found_needle = ""
        """What the find looked for: the row is found again when the rows change."""
        self.loaded = False
        self.first_paint: float | None = None
        """``time.perf_counter()`` at the end of the first drawing of loaded content."""
        self._heights: list[int] = []
        self._exact = bytearray()
        self._unmeasured = 0
        self._offsets: list[int] = [0]
        self._width = 0
        self._rows: OrderedDict[int, list[Row]] = OrderedDict()
        self._waiting: WaitingPrompt | None = None
        self._live: tuple[str, str, list[str]] | None = None
        self._live_rows: list[Row] = []
        self._follow = True
        self._adjusting = False
        self._pending = False
        self._pending_anchor: Anchor = None
        self._layouts = 0
        """Relayouts so far: a slice of background measuring left from an earlier one stops."""
        self._measuring = False

    @property
    def selected(self) -> int | None:
        """The selected card (drawn with a bar), or None."""
        return self._selected

    @selected.setter
    def selected(self, index: int | None) -> None:
        """Selecting a block measures the blocks that can share the screen with it (the
        screen stays put), so scrolling to it lands where the measured layout puts it: a
        card selected several screens away was estimated to be elsewhere."""
        self._selected = index
        if index is not None and self._width > 0 and index < len(self._heights):
            adjusting, self._adjusting = self._adjusting, True
            try:
                self._measure_around(index)
            finally:
                self._adjusting = adjusting

    @property
    def total_height(self) -> int:
        return self._offsets[-1] + len(self._live_rows)

    @property
    def unmeasured(self) -> int:
        """Blocks whose height is still an estimate."""
        return self._unmeasured

    @property
    def measuring(self) -> bool:
        """Whether estimated blocks are being measured, a slice between the app's events."""
        return self._measuring

    def _content_width(self) -> int:
        return self.scrollable_content_region.width

    def _measure(self, block: Block) -> int:
        rows = block_rows(
            block, self._width, show_reasoning=self.show_reasoning, details=self.details
        )
        return len(rows)

    def _set_height(self, index: int, *, exact: bool) -> None:
        """(Re)compute one block's height: measured if ``exact``, else estimated when the
        estimate is cheap (a message); collapsed cards and markers are always exact."""
        block = self.model.blocks[index]
        self._rows.pop(index, None)
        guess = (
            -1
            if exact
            else estimated_height(block, self._width, show_reasoning=self.show_reasoning)
        )
        measured = guess < 0 or block.kind not in ("user", "assistant")
        height = self._measure(block) if guess < 0 else guess
        if index == len(self._heights):
            self._heights.append(height)
            self._exact.append(1)
        was_exact = self._exact[index]
        self._heights[index] = height
        self._exact[index] = int(measured)
        self._unmeasured += was_exact - int(measured)

    def _offsets_from(self, first: int) -> None:
        start = self._offsets[first]
        self._offsets[first + 1 :] = list(accumulate(self._heights[first:], initial=start))[1:]

    def _change(self, mutate: Callable[[], set[int]], *, keep: bool = False) -> None:
        """Apply a change to the blocks; ``mutate()`` returns indices of earlier blocks that
        changed. New and changed blocks are measured at once; the new size and scroll
        position are published once per burst (or at once when ``keep``: a toggle)."""
        if self._width <= 0:
            mutate()
            return
        first_of_burst = not self._pending
        if first_of_burst:
            self._pending = True
            self._pending_anchor = self._anchor() if keep or not self._follow else None
        before = len(self.model.blocks)
        changed = mutate()
        for index in range(before, len(self.model.blocks)):
            self._set_height(index, exact=True)
        for index in changed:
            self._set_height(index, exact=True)
        self._offsets_from(min(changed, default=before))
        self._live_rows = self._make_live_rows()
        if keep or not self.is_attached:
            self._publish()
            if keep:
                self._follow = round(self.scroll_y) >= self.max_scroll_y
        elif first_of_burst:
            self.call_later(self._publish)

    def _publish(self) -> None:
        if not self._pending:
            return
        self._pending = False
        self._apply(self._pending_anchor)

    def _relayout(self, *, keep_position: bool) -> None:
        """Estimate every block again (new content, width or reasoning setting)."""
        self._publish()
        anchor = self._anchor() if keep_position and not self._follow else None
        self._width = self._content_width()
        self._rows.clear()
        self._heights, self._exact, self._unmeasured = [], bytearray(), 0
        if self._width > 0:
            for index in range(len(self.model.blocks)):
                self._set_height(index, exact=False)
        self._offsets = [0, *accumulate(self._heights)]
        self._live_rows = self._make_live_rows()
        self._find_row_again()
        self._apply(anchor)
        self._layouts += 1
        self._measuring = SYNC_MEASURE_LIMIT < self._unmeasured <= BACKGROUND_MEASURE_LIMIT
        if self._measuring:
            self.run_worker(self._measure_rest(self._layouts), group="measure")
        elif self._unmeasured <= SYNC_MEASURE_LIMIT:
            self._measure_some(self._unmeasured)

    async def _measure_rest(self, layout: int) -> None:
        """Measure every estimated block, newest first, ``MEASURE_SLICE`` between two turns of
        the event loop (the app handles its events, keys first, in between), then give them
        their heights at once: one reflow, the screen staying put. What was measured meanwhile
        (it came near the screen, or changed) keeps its own height; a relayout meanwhile (a
        new width, the reasoning shown) stops this one, which measured for the old."""
        heights: dict[int, int] = {}
        index = len(self._exact)
        while index >= 0:
            await asyncio.sleep(0)
            if layout != self._layouts or not self.is_attached:
                return
            for _ in range(MEASURE_SLICE):
                index = self._exact.rfind(0, 0, index)
                if index < 0:
                    break
                heights[index] = self._measure(self.model.blocks[index])
        first = len(self._heights)
        for index, height in heights.items():
            if not self._exact[index]:
                self._rows.pop(index, None)
                self._heights[index], self._exact[index] = height, 1
                self._unmeasured -= 1
                first = min(first, index)
        if first < len(self._heights):
            self._reflow(first)
            self.refresh()
        self._measuring = False

    def _find_row_again(self) -> None:
        """The found block's rows changed (width, reasoning): highlight the row that now
        shows the match."""
        if self.found is not None and self._width > 0 and self.found[0] < len(self.model.blocks):
            index = self.found[0]
            self.found = (index, first_row_with(self.rows_of(index), self.found_needle))

    def _apply(self, anchor: Anchor) -> None:
        """Publish the size, restore the scroll position, measure what is on screen."""
        self.virtual_size = Size(self._width, self.total_height)
        self._restore(anchor)
        self._measure_viewport()
        self.refresh()

    def screen_anchor(self) -> Anchor:
        """The block at the top of the screen and how many of its rows are above the screen:
        what stays put when estimates are replaced by measurements."""
        return self._anchor()

    def _anchor(self) -> Anchor:
        top = round(self.scroll_y)
        if not self.model.blocks or top >= self._offsets[-1]:
            return None
        index = bisect_right(self._offsets, top) - 1
        return index, top - self._offsets[index]

    def _jump(self, y: int) -> None:
        self._adjusting = True
        try:
            self.scroll_target_y = y
            self.scroll_y = y
        finally:
            self._adjusting = False

    def _restore(self, anchor: Anchor) -> None:
        if anchor is None:
            if self._follow:
                self._jump(self.max_scroll_y)
            return
        index, delta = anchor
        if index < len(self._heights):
            self._jump(self._offsets[index] + min(delta, max(0, self._heights[index] - 1)))

    def _measure_viewport(self) -> None:
        """Measure the blocks on screen (and a screen around it) before they are drawn,
        keeping the top of the screen in place when heights above it change. A block that
        measures shorter than its estimate brings more blocks near the screen: those are
        measured too, until every block there is."""
        adjusting, self._adjusting = self._adjusting, True  # keeping the anchor is no scroll
        try:
            self._measure_near_screen()
        finally:
            self._adjusting = adjusting

    def _measure_near_screen(self) -> None:
        while True:
            height = max(1, self.scrollable_content_region.height)
            top = round(self.scroll_y)
            index = max(0, bisect_right(self._offsets, max(0, top - height)) - 1)
            end = top + 2 * height
            first = -1
            while index < len(self._heights) and self._offsets[index] < end:
                if not self._exact[index]:
                    self._set_height(index, exact=True)
                    first = index if first < 0 else first
                index += 1
            if first < 0:
                return
            self._reflow(first)

    def _measure_around(self, index: int) -> None:
        """Measure block ``index`` and a screen's height of rows before and after it."""
        height = max(1, self.scrollable_content_region.height)
        before = self._measure_run(range(index - 1, -1, -1), height)
        it = self._measure_run(range(index, index + 1), 1)
        after = self._measure_run(range(index + 1, len(self._heights)), height)
        first = min(before, it, after)
        if first < len(self._heights):
            self._reflow(first)

    def _measure_run(self, indices: range, rows: int) -> int:
        """Measure the blocks of ``indices`` in turn until they hold ``rows`` rows; returns the
        lowest index measured (the number of blocks when none was)."""
        first = len(self._heights)
        for index in indices:
            if rows <= 0:
                break
            if not self._exact[index]:
                self._set_height(index, exact=True)
                first = min(first, index)
            rows -= self._heights[index]
        return first

    def _screen_is_measured(self) -> bool:
        """Whether every block with a row on screen has its measured height."""
        top = round(self.scroll_y)
        bottom = min(self._offsets[-1], top + self.scrollable_content_region.height)
        index = max(0, bisect_right(self._offsets, top) - 1)
        while index < len(self._heights) and self._offsets[index] < bottom:
            if not self._exact[index]:
                return False
            index += 1
        return True

    def _reflow(self, first: int) -> None:
        """New offsets after heights from ``first`` on changed; the screen stays put."""
        anchor = None if self._follow else self._anchor()
        self._offsets_from(first)
        self.virtual_size = Size(self._width, self.total_height)
        self._restore(anchor)

    def _measure_some(self, budget: int) -> int:
        """Measure up to ``budget`` unmeasured blocks, newest first; returns how many."""
        done, end, first = 0, len(self._exact), len(self._exact)
        while done < budget:
            index = self._exact.rfind(0, 0, end)
            if index < 0:
                break
            self._set_height(index, exact=True)
            first = end = index
            done += 1
        if done:
            self._reflow(first)
        return done

    def tail_rows(self, width: int) -> list[Row]:
        """The rows after the blocks (``dsh.tui.live_tail``): the prompt waiting to be
        logged, then what the model streams."""
        rows = waiting_prompt_rows(self._waiting, width) if self._waiting is not None else []
        if self._live is not None:
            text, reasoning, calls = self._live
            rows += live_rows(text, reasoning, calls, width, show_reasoning=self.show_reasoning)
        return rows

    def _make_live_rows(self) -> list[Row]:
        return self.tail_rows(self._width) if self._width > 0 else []

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._adjusting or not self.loaded or self._width <= 0:
            return
        self._follow = round(new_value) >= self.max_scroll_y
        self._measure_viewport()

    def on_resize(self, event: events.Resize) -> None:
        if self._content_width() != self._width:
            self._relayout(keep_position=True)
        elif self._follow and self._width > 0:  # shorter (a taller composer, a panel): the end
            self._restore(None)  # stays in view as the view follows it
            self._measure_viewport()
            self.refresh()

    def rows_of(self, index: int) -> list[Row]:
        rows = self._rows.get(index)
        if rows is None:
            block = self.model.blocks[index]
            rows = block_rows(
                block, self._width, show_reasoning=self.show_reasoning, details=self.details
            )
            self._rows[index] = rows
            if len(self._rows) > ROW_CACHE_BLOCKS:
                self._rows.popitem(last=False)
        else:
            self._rows.move_to_end(index)
        return rows

    def render_line(self, y: int) -> Strip:
        width = self._content_width()
        base = self.rich_style
        line = round(self.scroll_y) + y
        total = self._offsets[-1]
        row: Row = []
        selected = found = False
        if width == self._width and line < total:
            index = bisect_right(self._offsets, line) - 1
            rows = self.rows_of(index)
            at = line - self._offsets[index]
            if at < len(rows):
                row = rows[at]
                selected = index == self.selected and at < len(rows) - 1
                found = self.found == (index, at)
        elif width == self._width and line - total < len(self._live_rows):
            row = self._live_rows[line - total]
        strip = Strip(row)
        if found:
            strip = strip.apply_style(FOUND)
        if selected:
            strip = Strip([Segment("▌", SELECTED), *strip.crop(1, width)._segments])
        return strip.crop_extend(0, width, base).apply_style(base)

    def render_lines(self, crop: Region) -> list[Strip]:
        drawable = self._width > 0 and self._width == self._content_width()
        if drawable and not self._screen_is_measured():  # taller, or moved without measuring
            self._measure_viewport()
            self.refresh()
        lines = super().render_lines(crop)
        if self.first_paint is None and self.loaded:
            self.first_paint = time.perf_counter()
        return lines
