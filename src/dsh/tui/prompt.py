"""The composer: multi-line input with a history of earlier prompts and tab completion.

Enter sends; shift+enter or ctrl+j inserts a newline; a paste of any size arrives whole (one of
more than 20 lines as one placeholder: ``dsh.tui.paste_fold``).
Up on the first line and down on the last line walk the history of earlier prompts (this and
earlier runs: ``dsh.config.prompt_history``, read again when another dsh wrote to it; the open
session's own come first), ctrl+r searches it
(``dsh.tui.history_search``), and ctrl+g opens the draft in your editor
(``dsh.tui.external_editor``). Tab completes a slash command at the start of the draft, or an
``@path`` from the workspace (``dsh.tui.completion``); with several candidates it completes
their common prefix and names them in the hint line.

While something runs, a draft sent waits in the composer (``queue``): the box empties for the
next one and its border says what is queued; the app sends it when the running work ends well,
and puts it back in the box otherwise (``unqueue``).

Whatever enters the draft (a paste, a recalled prompt, a completed path) holds no character a
terminal would act on: each shows, and is sent, as its Python escape (``\\x1b``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.widgets import TextArea
from textual.widgets.text_area import Edit, EditResult, Selection

from dsh.config.prompt_history import (
    MAX_ENTRIES,
    PromptHistory,
    distinct,
    with_session_prompts,
)
from dsh.errors import printable_line
from dsh.tui.completion import Completion, complete_command, complete_path
from dsh.tui.external_editor import edit_draft
from dsh.tui.history_search import KEYS_HINT, ReverseSearch
from dsh.tui.paste_fold import PasteFolds, line_breaks
from dsh.tui.wrap import escape_controls

PLACEHOLDER = "Ask dsh…  (/help for commands, @ for files, esc cancels a running turn)"
QUEUED = "queued · sent when this turn ends · esc takes it back · "
"""The border title of a composer holding a queued draft (its first line follows)."""
QUEUED_OPENING = "queued · sent once the session is open · esc takes it back · "
"""The same while the session still opens."""
CLEARED_HINT = "draft cleared · ctrl+z brings it back"
NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j", "newline"})
MAX_LISTED = 8
"""Completion candidates named in the hint line; more are counted."""


class PromptBox(TextArea):
    DEFAULT_CSS = """
    PromptBox {
        height: auto;
        min-height: 3;
        max-height: 12;
        border: tall $border-blurred;
    }
    PromptBox:focus {
        border: tall $border;
    }
    PromptBox.-borderless, PromptBox.-borderless:focus {
        min-height: 1;
        border: none;
    }
    """

    BINDINGS = [  # noqa: RUF012 (Textual's declaration style)
        Binding("ctrl+r", "search_history", "Search history", show=False),
        Binding("ctrl+g", "edit_in_editor", "Edit in $EDITOR", show=False),
    ]

    class Submitted(Message):
        def __init__(self, prompt: PromptBox, value: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.value = value

    class Hint(Message):
        """The hint line should say ``text`` (the keys when empty)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Scroll(Message):
        """Scroll the transcript: ``home`` or ``end`` (keys pressed on an empty draft)."""

        def __init__(self, where: str) -> None:
            super().__init__()
            self.where = where

    def __init__(
        self,
        *,
        commands: Sequence[str] | Callable[[], Sequence[str]] = (),
        workspace: Path | None = None,
        send: Callable[[str], None] | None = None,
        home: Path | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(
            placeholder=PLACEHOLDER,
            id=id,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
        )
        self.commands = commands
        """The command names ``/`` completes, or what gives them (they may change)."""
        self.workspace = workspace
        self.send = send
        """Takes the draft as enter is read, before the keys after it (else ``Submitted``)."""
        self._file = PromptHistory(home)
        """The history file in ``home`` (None: this run's prompts only)."""
        self._saved = self._file.load()
        """The history on file and the prompts sent since, oldest first."""
        self.prompts: list[str] = distinct(self._saved)
        """Earlier prompts, oldest first, each once (``history`` is TextArea's undo history)."""
        self._own: list[str] = []
        """The open session's prompts and those sent since, the newest of ``prompts``."""
        self._index: int | None = None
        self._draft = ""
        self._draft_folds: dict[str, str] = {}
        """The draft's long pastes, while the history shows in its place."""
        self._said = False
        self.search: ReverseSearch | None = None
        """The ctrl+r search under way (None: none)."""
        self.folds = PasteFolds()
        """The long pastes the draft shows as placeholders (``dsh.tui.paste_fold``)."""
        self.queued: str | None = None
        self._queued_title = QUEUED
        """A draft sent while something ran, to send when it ends (None: none)."""

    @property
    def value(self) -> str:
        """The draft as it is sent: each long paste's placeholder replaced by the paste
        (``text`` is what the box shows)."""
        return self.folds.expand(self.text)

    @value.setter
    def value(self, text: str) -> None:
        self._end_search()
        if not text:  # sent or queued: its pastes went with it
            self.folds.clear()
        self.load_text(escape_controls(text))
        self.move_cursor(self.document.end)

    def edit(self, edit: Edit) -> EditResult:
        """Every insert, paste and replace comes here (and undo records what it did)."""
        edit.text = escape_controls(edit.text)
        if self.folds.texts:  # cutting into a placeholder deletes all of it
            start, end = sorted((self._offset(edit.from_location), self._offset(edit.to_location)))
            wide = self.folds.widen(self.text, start, end)
            if wide != (start, end):
                edit.from_location, edit.to_location = map(self._location, wide)
        return super().edit(edit)

    def remember(self, text: str) -> None:
        """Add a submitted prompt, on file too (an earlier copy of it moves to the end)."""
        if text:
            self._file.append(text, self.folds.spans_in(text))
            self._saved = [*self._saved[-MAX_ENTRIES:], text]
            self._own = [*self._own[-MAX_ENTRIES:], text]
            self.prompts = [*(p for p in self.prompts if p != text), text]
        self._index = None

    def seed(self, prompts: list[str]) -> None:
        """The history with ``prompts`` (the open session's) as its newest."""
        self._own = list(prompts)
        self.prompts = with_session_prompts(self._saved, prompts)
        self._index = None

    def _read_again(self) -> None:
        """As a walk or a search of the history starts: the file read again if another dsh
        (``dsh web``, another terminal) wrote to it since (one ``stat`` when none did)."""
        if self._file.changed():
            self._saved = self._file.load()
            self.prompts = with_session_prompts(self._saved, self._own)

    def clear_draft(self) -> bool:
        """Empty the box as an edit that ctrl+z undoes (the hint line says so); False if
        there was nothing to clear."""
        if self.search is not None:  # ctrl+c in a search: the draft back, as esc
            self._end_search(accept=False)
            return True
        if not self.text:
            return False
        self.history.checkpoint()
        self.clear()
        self._index = None
        self._said = True
        self.post_message(self.Hint(CLEARED_HINT))
        return True

    # ---- the queued draft -------------------------------------------------------------------

    def queue(self, draft: str, *, opening: bool = False) -> None:
        """Hold ``draft`` to send when the running work ends (``opening``: when the session
        is open); the box empties for the next."""
        self.queued = draft
        self._queued_title = QUEUED_OPENING if opening else QUEUED
        self.value = ""
        self._index = None
        self._show_queued()

    def take_queued(self) -> str | None:
        """The queued draft, no longer queued (None: none was)."""
        draft, self.queued = self.queued, None
        self._show_queued()
        return draft

    def unqueue(self) -> bool:
        """Put the queued draft back in the box, before anything typed since; False if none."""
        draft = self.take_queued()
        if draft is None:
            return False
        self.put_back(draft)
        return True

    def put_back(self, draft: str) -> None:
        """``draft`` (one taken from the queue to send) back in the box, before anything
        typed since: it was not sent."""
        typed, draft = self.text, self.folds.refold(draft)
        self.value = f"{draft}\n{typed}" if typed.strip() else draft

    def _show_queued(self) -> None:
        if self.queued is None:
            self.border_title = None
            return
        first = printable_line(self.queued.strip().split("\n", 1)[0])
        self.border_title = Content(self._queued_title + first)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if self._said and self.text:  # typing again (or the undo): the keys again
            self._said = False
            self.post_message(self.Hint(""))

    async def _on_key(self, event: events.Key) -> None:
        if self.search is not None and self._search_key(event):
            event.stop()
            event.prevent_default()
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            if self.send is not None:  # now: the keys typed after enter are the next draft
                self.send(self.value)
            else:
                self.post_message(self.Submitted(self, self.value))
            return
        if event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "tab" and self._complete():
            event.stop()
            event.prevent_default()
            return
        if not event.is_printable and await self._bound_here(event.key):
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)

    async def _bound_here(self, key: str) -> bool:
        """Run the binding of ``key`` (this box's, TextArea's editing keys, the app's ``esc``)
        now, in this box's turn, and say whether there was one. Textual runs a widget's
        non-priority binding only once the key has bubbled up to the app, through each
        parent's queue, while the keys after it go straight to this box: in a burst (typed
        ahead, a slow link, a paste right after esc) ctrl+u, backspace or esc took effect after
        the characters that followed them (``hello`` ctrl+u ``/new`` enter sent ``hello/new``).
        The chain is the app's own (``App._check_bindings``), so what runs is what would have
        run later."""
        return await self.app._check_bindings(key)

    # ---- completion ---------------------------------------------------------------------------

    def _offset(self, location: tuple[int, int]) -> int:
        """The offset in the draft of a (row, column)."""
        row, column = location
        lines = self.text.split("\n")
        return sum(len(line) + 1 for line in lines[:row]) + column

    def _location(self, offset: int) -> tuple[int, int]:
        """The (row, column) of ``offset`` in the draft."""
        before = self.text[:offset].split("\n")
        return len(before) - 1, len(before[-1])

    def completion(self) -> Completion | None:
        draft = self.text
        names = self.commands() if callable(self.commands) else self.commands
        found = complete_command(draft, names)
        if found is None and self.workspace is not None:
            found = complete_path(draft, self._offset(self.cursor_location), self.workspace)
        return found

    def _complete(self) -> bool:
        """Complete the word at the cursor; False when there is nothing to complete (tab then
        moves the focus as usual)."""
        found = self.completion()
        if found is None:
            return False
        draft = self.text
        current = draft[found.start : found.end]
        replacement = found.candidates[0] if len(found.candidates) == 1 else found.common
        replacement = escape_controls(replacement)  # as the draft will hold it
        if len(found.candidates) == 1 and not replacement.endswith("/"):
            replacement += " "
        if len(replacement) > len(current):
            self.value = draft[: found.start] + replacement + draft[found.end :]
            self.move_cursor(self._location(found.start + len(replacement)))
        if len(found.candidates) > 1:
            listed = "  ".join(printable_line(c) for c in found.candidates[:MAX_LISTED])
            more = len(found.candidates) - MAX_LISTED
            self.post_message(self.Hint(listed + (f"  (+{more} more)" if more > 0 else "")))
        else:
            self.post_message(self.Hint(""))
        return True

    def action_cursor_line_start(self, select: bool = False) -> None:
        if not self.text:
            self.post_message(self.Scroll("home"))
            return
        super().action_cursor_line_start(select)

    def action_cursor_line_end(self, select: bool = False) -> None:
        if not self.text:
            self.post_message(self.Scroll("end"))
            return
        super().action_cursor_line_end(select)

    # ---- history ------------------------------------------------------------------------------

    def action_cursor_up(self, select: bool = False) -> None:
        if not select and self.cursor_location[0] == 0 and self._history(-1):
            return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        last = self.document.line_count - 1
        if not select and self.cursor_location[0] == last and self._history(1):
            return
        super().action_cursor_down(select)

    def _history(self, step: int) -> bool:
        """Show an earlier (-1) or later (1) prompt; False when there is none to show."""
        if self._index is None and step < 0:
            self._read_again()
        if not self.prompts:
            return False
        if self._index is None:
            if step > 0:
                return False
            self._draft, self._draft_folds = self.text, dict(self.folds.texts)
            index = len(self.prompts) - 1
        else:
            index = self._index + step
            if index >= len(self.prompts):
                self._index = None
                self.folds.texts = dict(self._draft_folds)
                self.value = self._draft
                return True
            index = max(0, index)
        self._index = index
        self._recall(self.prompts[index])
        return True

    def _recall(self, prompt: str) -> None:
        """Show an earlier prompt in place of the draft, its long pastes folded as they were
        when it was sent (where the history says they are; else those this composer knows)."""
        self.folds.texts = dict(self._draft_folds)  # the draft's, and none recalled before
        spans = self._file.pasted.get(prompt)
        if spans and escape_controls(prompt) == prompt:
            self.value = self.folds.fold_spans(prompt, spans)
        else:
            self.value = self.folds.refold(prompt)

    # ---- ctrl+r: search the history; ctrl+g: the draft in your editor ----------------------

    def action_search_history(self) -> None:
        """Start a search back through the history (ctrl+r again, in it: the next older)."""
        if self.search is None:
            self._read_again()
            self._draft_folds = dict(self.folds.texts)
            self.search = ReverseSearch(self.prompts, self.text)
            self._said = False
            self.post_message(self.Hint(KEYS_HINT))
        else:
            self.search.older()
        self._show_search()

    def _search_key(self, event: events.Key) -> bool:
        """Take a key while searching; False when it is not the search's: the search has
        ended, taking the prompt shown, and the key does what it does."""
        assert self.search is not None
        step = self.search.key(event.key, event.character if event.is_printable else None)
        if step == "shown":
            self._show_search()
        else:
            self._end_search(accept=step != "cancel")
        return step != "other"

    def _show_search(self) -> None:
        search = self.search
        assert search is not None
        self.load_text(escape_controls(search.shown))
        span = search.span(self.text)
        if span is None:
            self.move_cursor(self.document.end)
        else:
            self.selection = Selection(self._location(span[0]), self._location(span[1]))
        self.border_title = Content(search.title())

    def _end_search(self, *, accept: bool = True) -> None:
        """End the search with the prompt shown in the box (``accept``) or the draft back."""
        search, self.search = self.search, None
        if search is None:
            return
        if not accept:
            self.load_text(escape_controls(search.draft))
        elif search.index is not None:  # a prompt taken from the history: folded as sent
            self._recall(search.shown)
        self.move_cursor(self.document.end)
        self._index = None
        self._show_queued()  # the border as it was
        self.post_message(self.Hint(""))

    def on_blur(self, _: events.Blur) -> None:
        self._end_search()

    def on_paste(self, event: events.Paste) -> None:
        """A paste while searching adds its first line to the query; a long one shows as its
        placeholder; any other is inserted by TextArea's handler, run after this one."""
        text = line_breaks(event.text)
        label = None if self.search else self.folds.fold(escape_controls(text))
        if self.search is None and label is None and text == event.text:
            return
        event.stop()
        event.prevent_default()
        if self.search is None:
            self.move_cursor(self.replace(label or text, *self.selection).end_location)
            return
        self.search.type(text.split("\n", 1)[0])
        self._show_search()

    def paste(self, text: str) -> None:
        """Insert ``text``, pasted (or typed) while something else had the keys, at the cursor:
        a long paste as its placeholder."""
        self._end_search()
        text = line_breaks(text)
        self.insert(self.folds.fold(escape_controls(text)) or text)

    def action_edit_in_editor(self) -> None:
        """Edit the draft in $VISUAL / $EDITOR (``dsh.tui.external_editor``); ctrl+z takes
        the editor's change back."""
        self._end_search()
        edited = edit_draft(self.app, self.value)
        if edited.text is None:
            self.post_message(self.Hint(edited.note))
            self._said = True  # until the draft changes
            return
        self.replace(edited.text, self.document.start, self.document.end)
        self.move_cursor(self.document.end)
