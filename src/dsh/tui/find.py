"""Find in the transcript: ``ctrl+f`` opens a bar above the prompt.

Typing searches as you type (case-insensitive) from the top of the screen down, wrapping
round; ``enter`` or ``down`` goes to the next block that matches, ``shift+enter`` or ``up`` to
the previous one, ``esc`` closes the bar and gives the prompt its focus back. A match inside a
collapsed tool card (or in a compaction pass's summaries, at its marker) opens it; the row
where the first match begins (``found_row``) is highlighted and put on screen. Reasoning is
searched only while it is shown (``ctrl+t``). In a long session the first key's search folds
every block's text (``SearchIndex``) in a thread, the bar saying ``searching…`` and taking keys
meanwhile; the matches are then those a search on the event loop finds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import suppress

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from dsh.transcript import PassDetails, ToolResultItem
from dsh.tui.blocks import Block, card_text
from dsh.tui.hint_line import Hint, HintLine
from dsh.tui.short_screen import fit_to_height
from dsh.tui.transcript_view import TranscriptView
from dsh.tui.wrap import escape_controls

PLACEHOLDER = "find in the transcript"
KEYS: tuple[Hint, ...] = (
    ("enter/down next", 1),
    ("shift+enter/up previous", 2),
    ("pgup/pgdn scroll", 3),
    ("esc back to the prompt", 0),
)
"""The find bar's keys on the hint line (the highest ranks left out first when it is narrow)."""
FOLDED_ON_THE_LOOP = 500
"""At most this many blocks to fold, a key folds them itself; more (the first key in a long
session: 37,000 blocks take 1-2 s) are folded in a thread while the bar says ``SEARCHING``."""
FOLDED_AT_ONCE = 200
"""Blocks the thread folds before it lets the event loop run."""
SEARCHING = "searching…"


def searchable(block: Block, *, show_reasoning: bool, details: PassDetails | None = None) -> str:
    """What a find looks in for ``block``, case-folded: what the block can show (a marker:
    the summaries of its pass, ``details``, as the web's find does; a hidden note: nothing)."""
    if block.hidden:
        return ""
    if block.kind in ("tool", "result"):
        return card_text(block).casefold()
    if block.kind == "marker":
        summaries = details.summaries if details is not None else []
        return "\n".join(summary for _, summary in summaries).casefold()
    if show_reasoning:
        return f"{block.reasoning}\n{block.text}".casefold()
    return block.text.casefold()


def matching_blocks(
    blocks: list[Block],
    needle: str,
    *,
    show_reasoning: bool,
    details: Mapping[str, PassDetails] | None = None,
) -> list[int]:
    """The indices of the blocks whose text holds ``needle`` (case-insensitive), in order."""
    return SearchIndex().matching(blocks, needle, show_reasoning=show_reasoning, details=details)


Entry = tuple[Block, ToolResultItem | None, bool, int, bool, str]
"""An index entry: the block, its result, whether reasoning was in, how many summaries its pass
had (a marker), whether it is hidden, then the folded text (the first five are its key)."""


class SearchIndex:
    """Each block's searchable text, folded once and kept while the block is unchanged (a
    find runs on every key typed; folding a long session's text each time would lag).

    Folding every block is the slow part (a tool result is sanitised first): ``stale`` says
    which blocks need it and ``refresh`` folds some of them, so the find bar folds a long
    session's blocks in a thread the first time (``FindBar``), not on the event loop."""

    def __init__(self) -> None:
        self._texts: list[Entry] = []

    @staticmethod
    def _key(
        block: Block, show_reasoning: bool, details: Mapping[str, PassDetails]
    ) -> tuple[tuple[Block, ToolResultItem | None, bool, int, bool], PassDetails | None]:
        found = details.get(block.pass_id) if block.kind == "marker" else None
        summaries = len(found.summaries) if found is not None else 0
        return (block, block.result, show_reasoning, summaries, block.hidden), found

    def stale(
        self,
        blocks: list[Block],
        *,
        show_reasoning: bool,
        details: Mapping[str, PassDetails] | None = None,
    ) -> list[int]:
        """The indices of the blocks whose folded text is missing or out of date, in order
        (entries past the last block are dropped)."""
        texts, details = self._texts, details or {}
        del texts[len(blocks) :]
        kept = len(texts)
        out = [
            i
            for i, (entry, block) in enumerate(zip(texts, blocks, strict=False))
            if entry[0] is not block  # the cheap checks first: this runs on every key
            or entry[1] is not block.result
            or entry[2] != show_reasoning
            or entry[4] != block.hidden
            or (
                block.kind == "marker" and entry[:5] != self._key(block, show_reasoning, details)[0]
            )
        ]
        out.extend(range(kept, len(blocks)))
        return out

    def refresh(
        self,
        blocks: list[Block],
        indices: list[int],
        *,
        show_reasoning: bool,
        details: Mapping[str, PassDetails] | None = None,
    ) -> None:
        """Fold the text of the blocks at ``indices`` (ascending, as ``stale`` gives them)."""
        texts, details = self._texts, details or {}
        for i in indices:
            if i >= len(blocks) or i > len(texts):
                break  # the blocks were cut meanwhile: the next ``stale`` says what is left
            block = blocks[i]
            key, found = self._key(block, show_reasoning, details)
            text = searchable(block, show_reasoning=show_reasoning, details=found)
            if i < len(texts):
                texts[i] = (*key, text)
            else:
                texts.append((*key, text))

    def found(self, needle: str) -> list[int]:
        """The indices of the kept texts holding ``needle`` (case-insensitive)."""
        folded = needle.casefold()
        if not folded:
            return []
        return [i for i, entry in enumerate(self._texts) if folded in entry[5]]

    def matching(
        self,
        blocks: list[Block],
        needle: str,
        *,
        show_reasoning: bool,
        details: Mapping[str, PassDetails] | None = None,
    ) -> list[int]:
        if not needle.casefold():
            return []
        stale = self.stale(blocks, show_reasoning=show_reasoning, details=details)
        self.refresh(blocks, stale, show_reasoning=show_reasoning, details=details)
        return self.found(needle)


def first_at_or_after(matches: list[int], index: int) -> int:
    """The position in ``matches`` of the first block at or after ``index`` (wrapping to 0)."""
    return next((n for n, block in enumerate(matches) if block >= index), 0)


class FindInput(Input):
    """The bar's text field; ``up``/``down`` and ``shift+enter`` step through the matches. A
    paste's escapes show as the composer shows them."""

    BINDINGS = [  # noqa: RUF012 (Textual's declaration style)
        Binding("down", "step(1)", "Next match", show=False),
        Binding("up,shift+enter", "step(-1)", "Previous match", show=False),
        Binding("escape", "close", "Close find", show=False),
    ]

    def insert_text_at_cursor(self, text: str) -> None:
        super().insert_text_at_cursor(escape_controls(text))

    def replace(self, text: str, start: int, end: int) -> None:
        super().replace(escape_controls(text), start, end)

    def action_step(self, step: int) -> None:
        bar = self.parent
        if isinstance(bar, FindBar):
            bar.step(step)

    def action_close(self) -> None:
        bar = self.parent
        if isinstance(bar, FindBar):
            bar.close()


class FindBar(Horizontal):
    """The find bar: a text field and what it found (``2 of 5``, ``no match``)."""

    DEFAULT_CSS = """
    FindBar {
        height: 1;
        display: none;
    }
    FindBar.open {
        display: block;
    }
    FindBar FindInput, FindBar FindInput:focus {
        width: 1fr;
        height: 1;
        border: none;
        padding: 0 1;
    }
    FindBar #find-label {
        width: auto;
        padding: 0 0 0 1;
        color: $accent;
    }
    FindBar #find-status {
        width: auto;
        padding: 0 1;
        color: $text-muted;
    }
    """

    def __init__(
        self, view: TranscriptView, *, cursor_blink: bool = True, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.view = view
        self.cursor_blink = cursor_blink
        self.matches: list[int] = []
        self.index = SearchIndex()
        self.position = 0
        self.folding = False
        """Whether a thread is folding blocks into ``index`` (no key reads it meanwhile)."""

    def compose(self) -> ComposeResult:
        yield Static("find", id="find-label", markup=False)
        field = FindInput(placeholder=PLACEHOLDER, id="find-input")
        field.cursor_blink = self.cursor_blink
        yield field
        yield Static("", id="find-status", markup=False)

    @property
    def needle(self) -> str:
        return self.query_one(FindInput).value

    def open(self) -> None:
        """Show the bar and focus it; a needle left from before is searched again."""
        self.add_class("open")
        fit_to_height(self.screen, self.app.size.height)
        self.app.query_one(HintLine).say_hints(KEYS)
        field = self.query_one(FindInput)
        field.focus()
        field.select_all()
        self.search()

    def close(self) -> None:
        self.remove_class("open")
        fit_to_height(self.screen, self.app.size.height)
        self.app.query_one(HintLine).clear()
        self.view.show_found(None)
        self.app.query_one("#prompt").focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.search()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.step(1)

    def on_key(self, event: events.Key) -> None:
        if event.key in ("pageup", "pagedown"):  # the transcript scrolls under the bar
            event.stop()
            self.view.scroll_by_key(event.key.replace("page", "page_"))

    def _matching(self) -> list[int] | None:
        """The blocks matching the needle; None while the index is folded in a thread, which
        is started here when many blocks need folding (the search runs again once done)."""
        if self.folding:
            return None
        view, needle = self.view, self.needle
        if not needle.casefold():
            return []
        shown, details = view.show_reasoning, view.details
        stale = self.index.stale(view.model.blocks, show_reasoning=shown, details=details)
        if len(stale) > FOLDED_ON_THE_LOOP:
            self.folding = True
            blocks, passes = view.model.blocks, dict(details)  # the thread reads these
            self.run_worker(
                lambda: self._fold(blocks, stale, shown, passes), thread=True, group="find-index"
            )
            return None
        self.index.refresh(view.model.blocks, stale, show_reasoning=shown, details=details)
        return self.index.found(needle)

    def _fold(
        self,
        blocks: list[Block],
        stale: list[int],
        shown: bool,
        details: Mapping[str, PassDetails],
    ) -> None:
        """In a worker thread: fold the stale blocks (a block changed meanwhile is folded
        again by the next search: its key differs), then search again on the event loop."""
        worker = get_current_worker()
        for start in range(0, len(stale), FOLDED_AT_ONCE):
            if worker.is_cancelled:  # the app quits: it need not wait for the rest
                return
            part = stale[start : start + FOLDED_AT_ONCE]
            self.index.refresh(blocks, part, show_reasoning=shown, details=details)
            time.sleep(0)  # let the event loop have the GIL: keys go on echoing
        with suppress(RuntimeError):  # the app quit meanwhile
            self.app.call_from_thread(self._folded)

    def _folded(self) -> None:
        self.folding = False
        if self.has_class("open"):
            self.search()

    def search(self) -> None:
        """Find from the block at the top of the screen down, wrapping round."""
        view = self.view
        matches = self._matching()
        if matches is None:
            self._show_searching()
            return
        self.matches = matches
        self.position = first_at_or_after(self.matches, view.top_block())
        self._show()

    def step(self, step: int) -> None:
        """Go to the next (``1``) or previous (``-1``) matching block. The matches are found
        again first (cheap: the index keeps each block's text), so blocks logged since the
        last key and reasoning shown or hidden with ctrl+t count."""
        view = self.view
        shown = self.matches[self.position] if self.matches else view.top_block()
        matches = self._matching()
        if matches is None:
            self._show_searching()
            return
        self.matches = matches
        if self.matches:
            after = first_at_or_after(self.matches, shown)
            on_it = self.matches[after] == shown
            moved = step if on_it or step < 0 else 0  # a block no longer matching: stay put
            self.position = (after + moved) % len(self.matches)
        self._show()

    def _show_searching(self) -> None:
        self.query_one("#find-status", Static).update(SEARCHING)

    def _show(self) -> None:
        status = self.query_one("#find-status", Static)
        if not self.needle:
            status.update("")
            self.view.show_found(None)
            return
        if not self.matches:
            status.update("no match")
            self.view.show_found(None)
            return
        index = self.matches[self.position]
        view = self.view
        block = view.model.blocks[index]
        if block.expandable and not block.expanded:
            view.toggle(index)
        view.show_found(index, self.needle)
        status.update(f"{self.position + 1} of {len(self.matches)}")
