"""Find in the transcript: ``ctrl+f`` opens a bar above the prompt.

Typing searches as you type (case-insensitive) from the top of the screen down, wrapping
round; ``enter`` or ``down`` goes to the next block that matches, ``shift+enter`` or ``up`` to
the previous one, ``esc`` closes the bar and gives the prompt its focus back. A match inside a
collapsed tool card (or in a compaction pass's summaries, at its marker) opens it; the row
where the first match begins (``found_row``) is highlighted and put on screen. Reasoning is
searched only while it is shown (``ctrl+r``).
"""

from __future__ import annotations

from collections.abc import Mapping

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Input, Static

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


class SearchIndex:
    """Each block's searchable text, folded once and kept while the block is unchanged (a
    find runs on every key typed; folding a long session's text each time would lag)."""

    def __init__(self) -> None:
        self._texts: list[tuple[Block, ToolResultItem | None, bool, int, bool, str]] = []
        """Per block: the block, its result, whether reasoning was in, how many summaries its
        pass had (a marker), whether it is hidden, the folded text."""

    def matching(
        self,
        blocks: list[Block],
        needle: str,
        *,
        show_reasoning: bool,
        details: Mapping[str, PassDetails] | None = None,
    ) -> list[int]:
        folded = needle.casefold()
        if not folded:
            return []
        texts, details = self._texts, details or {}
        del texts[len(blocks) :]
        for i, block in enumerate(blocks):
            found = details.get(block.pass_id) if block.kind == "marker" else None
            summaries = len(found.summaries) if found is not None else 0
            key = (block, block.result, show_reasoning, summaries, block.hidden)
            if i < len(texts) and texts[i][:5] == key:
                continue
            text = searchable(block, show_reasoning=show_reasoning, details=found)
            if i < len(texts):
                texts[i] = (*key, text)
            else:
                texts.append((*key, text))
        return [i for i, entry in enumerate(texts) if folded in entry[5]]


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

    def _matching(self) -> list[int]:
        view = self.view
        return self.index.matching(
            view.model.blocks,
            self.needle,
            show_reasoning=view.show_reasoning,
            details=view.details,
        )

    def search(self) -> None:
        """Find from the block at the top of the screen down, wrapping round."""
        view = self.view
        self.matches = self._matching()
        self.position = first_at_or_after(self.matches, view.top_block())
        self._show()

    def step(self, step: int) -> None:
        """Go to the next (``1``) or previous (``-1``) matching block. The matches are found
        again first (cheap: the index keeps each block's text), so blocks logged since the
        last key and reasoning shown or hidden with ctrl+r count."""
        view = self.view
        shown = self.matches[self.position] if self.matches else view.top_block()
        self.matches = self._matching()
        if self.matches:
            after = first_at_or_after(self.matches, shown)
            on_it = self.matches[after] == shown
            moved = step if on_it or step < 0 else 0  # a block no longer matching: stay put
            self.position = (after + moved) % len(self.matches)
        self._show()

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
