"""The transcript view: what the blocks are, how people move through them and find in them.

The drawing and the lazy measuring under it are ``TranscriptLayout``'s (``transcript_layout``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping

from textual import events
from textual.binding import Binding
from textual.message import Message

from dsh.events.codec import gc_paused
from dsh.transcript import PassDetails, TranscriptItem
from dsh.tui.blocks import Block, plain_lines, row_text
from dsh.tui.found_row import first_row_with
from dsh.tui.live_tail import WaitingPrompt
from dsh.tui.transcript_layout import TranscriptLayout
from dsh.tui.wrap import sanitize


class TranscriptView(TranscriptLayout, can_focus=True):
    """Scrolling transcript; ``up``/``down`` select a card, ``enter`` or a click expands it.

    ctrl+o (``toggle_current``) acts on the card people chose (``up``/``down``, a click) until
    they send something or press End (``follow_end``); else on the last card on the screen
    when they scrolled away from the end, and on the newest card when the view follows it. A
    card ctrl+o marks is not chosen: a newer card takes the mark off it."""

    DEFAULT_CSS = """
    TranscriptView {
        height: 1fr;
        overflow-x: hidden;
        overflow-y: scroll;
        scrollbar-size-vertical: 1;
    }
    """

    BINDINGS = [  # noqa: RUF012 (Textual's declaration style)
        Binding("up", "select(-1)", "Previous card", show=False),
        Binding("down", "select(1)", "Next card", show=False),
        Binding("enter,space", "toggle_selected", "Expand / collapse", show=False),
    ]

    class Typed(Message):
        """Text typed or pasted with the transcript focused: it belongs in the prompt."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    # ---- content ----------------------------------------------------------------------------

    def load(self, items: Iterable[TranscriptItem], details: Mapping[str, PassDetails]) -> None:
        """Show a whole transcript (a session opened cold), scrolled to its end."""
        self.model.clear()
        with gc_paused():  # tens of thousands of acyclic blocks: no collection to find
            self.model.add(items)
        self.details = details
        self.selected = self.found = None
        self.chosen = False
        self._live = self._waiting = None
        self._follow = True
        self._pending = False
        self.loaded = True
        self._relayout(keep_position=False)

    def add_items(self, items: list[TranscriptItem]) -> list[Block]:
        """Append what the projector made of one live event (a result joins its card); the
        blocks added."""
        before = len(self.model.blocks)
        if items:
            self._change(lambda: self.model.add(items))
            if not self.chosen and self.selected not in (None, self._newest()):
                self.selected = None  # ctrl+o's mark: the newest card is current now
                self.refresh()
        return self.model.blocks[before:]

    def restyle(self, indices: set[int]) -> None:
        """Draw these blocks again (what a running card says changed)."""
        self._change(lambda: indices)

    def add_note(self, text: str) -> Block:
        """A local line for people (a command's answer); it is not part of the log."""
        added: list[Block] = []

        def add() -> set[int]:
            added.append(self.model.add_note(text))
            return set()

        self._change(add)
        return added[0]

    def set_note(self, note: Block, text: str) -> bool:
        """Say ``text`` in a local note instead; False if it is no longer in the transcript
        (another was loaded since)."""
        index = self.model.index_of(note)
        if index is None:
            return False
        note.cached_text = sanitize(text)
        self._change(lambda: {index})
        return True

    def show_notes(self, notes: Iterable[Block], *, shown: bool) -> None:
        """Take local notes off the screen (``shown`` False) or put them back in place; a
        note no longer in the transcript (another session was opened) is left alone."""

        def hide_or_show() -> set[int]:
            changed: set[int] = set()
            for note in notes:
                index = self.model.index_of(note)
                if index is not None and note.hidden == shown:
                    note.hidden = not shown
                    changed.add(index)
            return changed

        self._change(hide_or_show)

    def set_live(self, text: str, reasoning: str, calls: list[str]) -> None:
        """Show what the model streams before its message is logged."""
        self._live = (text, reasoning, calls)
        self._change(set)

    def set_waiting(self, waiting: WaitingPrompt | None) -> None:
        """Show a prompt sent but not logged yet after the blocks (None: no longer)."""
        if waiting != self._waiting:
            self._waiting = waiting
            self._change(set)

    def clear_live(self) -> None:
        if self._live is not None:
            self._live = None
            self._change(set)

    def refresh_markers(self) -> None:
        """A pass logged another summary: expanded markers show it."""
        expanded = [i for i in self.model.marker_indices() if self.model.blocks[i].expanded]
        if expanded:
            self._change(lambda: set(expanded))

    def toggle(self, index: int) -> None:
        """Expand or collapse a card, keeping the top of the screen in place; a view that
        followed the end keeps following when the card's first row stays on screen there."""
        block = self.model.blocks[index]
        if block.expandable:
            following = self._follow
            block.expanded = not block.expanded
            self._change(lambda: {index}, keep=True)
            if following and self._width > 0 and self._offsets[index] >= self.max_scroll_y:
                self._follow = True
                self._restore(None)
                self._measure_viewport()

    def toggle_current(self) -> None:
        """Expand or collapse the chosen card, else the last one on screen when the view was
        scrolled away from the end, else the newest (the class's docstring); it is marked, not
        chosen."""
        self._publish()
        index = self.selected if self.chosen else None
        if index is None and not self._follow:
            screen_end = bisect_right(self._offsets, round(self.scroll_y) + self.size.height - 1)
            index = self._newest(min(screen_end, len(self.model.blocks)))
        if index is None:
            index = self._newest()
        if index is not None:
            self.selected = index
            self.toggle(index)
            self.scroll_to_block(index)

    def _newest(self, end: int | None = None) -> int | None:
        """The last expandable card before block ``end`` (default: of all), or None."""
        start = len(self.model.blocks) if end is None else end
        return next((i for i in range(start - 1, -1, -1) if self._expandable(i)), None)

    def set_show_reasoning(self, show: bool) -> None:
        if show != self.show_reasoning:
            self.show_reasoning = show
            self._relayout(keep_position=True)

    # ---- reading it back (tests, benchmarks) -------------------------------------------------

    def rendered_lines(self, width: int | None = None) -> list[str]:
        """Every row of the transcript as plain text, its live tail included."""
        width = width or self._width or 80
        lines = plain_lines(self.model.blocks, width, self.show_reasoning, self.details)
        return lines + [row_text(row).rstrip() for row in self.tail_rows(width)]

    def _expandable(self, index: int) -> bool:
        if index >= len(self._heights):
            return False
        return self.model.blocks[index].expandable and self._heights[index] > 0

    # ---- scrolling and selection -------------------------------------------------------------

    def scroll_to_block(self, index: int) -> None:
        self._publish()
        top, bottom = self._offsets[index], self._offsets[index + 1]
        view = self.scrollable_content_region.height
        if top < self.scroll_y:
            self._jump(top)
        elif bottom > self.scroll_y + view:
            self._jump(min(top, max(0, bottom - view)))
        self._follow = round(self.scroll_y) >= self.max_scroll_y
        self._measure_viewport()
        self.refresh()

    def follow_end(self) -> None:
        """Scroll to the end and follow new output again (the person sent something); the
        card they chose is no longer ctrl+o's."""
        self._publish()
        self._follow = True
        self.chosen = False
        if self._width > 0:
            self._restore(None)
            self._measure_viewport()
            self.refresh()

    def top_block(self) -> int:
        """The index of the block at the top of the screen."""
        return max(0, bisect_right(self._offsets, round(self.scroll_y)) - 1)

    def show_found(self, index: int | None, needle: str = "") -> None:
        """Highlight the row of block ``index`` where ``needle`` begins and scroll it to a
        third of the screen's height (None: no highlight)."""
        self._publish()
        self.found_needle = needle
        found = None
        if index is not None and index < len(self.model.blocks):
            found = (index, first_row_with(self.rows_of(index), needle) if self._width > 0 else 0)
        self.found = found
        if found is not None and self._width > 0:
            index, row = found
            for _ in range(2):  # measuring around the match can move it: aim again
                self._jump(max(0, self._offsets[index] + row - self.size.height // 3))
                self._follow = round(self.scroll_y) >= self.max_scroll_y
                self._measure_viewport()
        self.refresh()

    def scroll_by_key(self, where: str) -> None:
        """``page_up``, ``page_down``, ``home`` or ``end`` (which follows the end again)."""
        if where == "page_up":
            self.scroll_page_up(animate=False)
        elif where == "page_down":
            self.scroll_page_down(animate=False)
        elif where == "home":
            self.scroll_home(animate=False)
        else:
            self.follow_end()

    def action_select(self, step: int) -> None:
        self._publish()
        count = len(self.model.blocks)
        top = round(self.scroll_y)
        if self.selected is not None:
            index = self.selected
        elif step < 0:  # from just below the last row on screen
            index = min(count, bisect_right(self._offsets, top + self.size.height - 1))
        else:  # from just above the first row on screen
            index = bisect_right(self._offsets, top) - 2
        index += step
        while 0 <= index < count and not self._expandable(index):
            index += step
        if 0 <= index < count:
            self.selected = index
            self.chosen = True
            self.scroll_to_block(index)

    def action_toggle_selected(self) -> None:
        if self.selected is not None:
            self.toggle(self.selected)

    def on_key(self, event: events.Key) -> None:
        if event.is_printable and event.character and event.key != "space":
            event.stop()
            event.prevent_default()
            self.post_message(self.Typed(event.character))

    def on_paste(self, event: events.Paste) -> None:
        event.stop()
        self.post_message(self.Typed(event.text))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        self._publish()
        if offset is None:
            return
        y = round(self.scroll_y) + offset.y
        if y < self._offsets[-1]:
            index = bisect_right(self._offsets, y) - 1
            if self._expandable(index):
                self.selected = index
                self.chosen = True
                self.toggle(index)
