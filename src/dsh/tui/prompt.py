"""The composer: multi-line input with a history of earlier prompts and tab completion.

Enter sends; shift+enter or ctrl+j inserts a newline; a paste of any size is inserted whole.
Up on the first line and down on the last line walk the history of earlier prompts. Tab
completes a slash command at the start of the draft, or an ``@path`` from the workspace;
with several candidates it completes their common prefix and names them in the hint line.

While something runs, a draft sent waits in the composer (``queue``): the box empties for the
next one and its border says what is queued; the app sends it when the running work ends well,
and puts it back in the box otherwise (``unqueue``).

Whatever enters the draft (a paste, a recalled prompt, a completed path) holds no character a
terminal would act on: each shows, and is sent, as its Python escape (``\\x1b``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from textual import events
from textual.content import Content
from textual.message import Message
from textual.widgets import TextArea
from textual.widgets.text_area import Edit, EditResult

from dsh.agent.path_completion import common_prefix, mention, path_candidates
from dsh.errors import printable_line
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


@dataclass(frozen=True, slots=True)
class Completion:
    start: int
    """Offset in the draft where the completed word starts."""
    end: int
    candidates: tuple[str, ...]
    """Full replacements for ``draft[start:end]``, sorted."""

    @property
    def common(self) -> str:
        return common_prefix(self.candidates)


def complete_command(draft: str, commands: Sequence[str]) -> Completion | None:
    """``/na`` at the start of a one-word draft: the commands it may begin."""
    if not draft.startswith("/") or any(c.isspace() for c in draft):
        return None
    word = draft[1:].lower()
    found = tuple(sorted(f"/{c}" for c in commands if c.startswith(word)))
    return Completion(0, len(draft), found) if found else None


def complete_path(draft: str, cursor: int, workspace: Path) -> Completion | None:
    """``@some/pa`` ending at ``cursor``: the workspace entries it may name, as
    ``dsh.agent.path_completion`` finds them (directories end in ``/``; hidden entries only when
    the typed part starts with a dot; nothing outside the workspace).

    A name with a space or a quote in it is inserted quoted, ``@"my notes.md"``, the form a
    mention of it takes (``dsh.agent.mentions``; ``dsh.agent.path_completion.mention``, as
    ``dsh web``'s composer inserts it); a quoted directory is left open, ``@"my dir/``, so
    completing goes on inside it, and ``@"my d`` completes as typed."""
    quoted = _open_quote(draft, cursor)
    if quoted is not None:
        start, typed = quoted, draft[quoted + 2 : cursor]
    else:
        start = cursor
        while start > 0 and not draft[start - 1].isspace():
            start -= 1
        word = draft[start:cursor]
        if not word.startswith("@"):
            return None
        typed = word[1:]
    names = path_candidates(typed, workspace)
    found = tuple(mention(name, quoted=quoted is not None) for name in names)
    return Completion(start, cursor, found) if found else None


def _open_quote(draft: str, cursor: int) -> int | None:
    """Where an ``@"`` whose quote is still open at ``cursor`` starts (on the cursor's line)."""
    line_start = draft.rfind("\n", 0, cursor) + 1
    at = draft.rfind('@"', line_start, cursor)
    if at < 0 or '"' in draft[at + 2 : cursor]:
        return None
    if at > 0 and not (draft[at - 1].isspace() or draft[at - 1] in "([{'\"`"):
        return None  # inside a word: not a mention
    return at


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
        self.prompts: list[str] = []
        """Earlier prompts, oldest first (``history`` is TextArea's undo history)."""
        self._index: int | None = None
        self._draft = ""
        self._cleared = False
        self.queued: str | None = None
        self._queued_title = QUEUED
        """A draft sent while something ran, to send when it ends (None: none)."""

    @property
    def value(self) -> str:
        return self.text

    @value.setter
    def value(self, text: str) -> None:
        self.load_text(escape_controls(text))
        self.move_cursor(self.document.end)

    def edit(self, edit: Edit) -> EditResult:
        """Every insert, paste and replace comes here (and undo records what it did)."""
        edit.text = escape_controls(edit.text)
        return super().edit(edit)

    def remember(self, text: str) -> None:
        """Add a submitted prompt (a repeat of the last one is kept once)."""
        if text and (not self.prompts or self.prompts[-1] != text):
            self.prompts.append(text)
        self._index = None

    def seed(self, prompts: list[str]) -> None:
        self.prompts = list(prompts)
        self._index = None

    def clear_draft(self) -> bool:
        """Empty the box as an edit that ctrl+z undoes (the hint line says so); False if
        there was nothing to clear."""
        if not self.text:
            return False
        self.history.checkpoint()
        self.clear()
        self._index = None
        self._cleared = True
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
        typed = self.text
        self.value = f"{draft}\n{typed}" if typed.strip() else draft

    def _show_queued(self) -> None:
        if self.queued is None:
            self.border_title = None
            return
        first = printable_line(self.queued.strip().split("\n", 1)[0])
        self.border_title = Content(self._queued_title + first)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if self._cleared and self.text:  # typing again (or the undo): the keys again
            self._cleared = False
            self.post_message(self.Hint(""))

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            if self.send is not None:  # now: the keys typed after enter are the next draft
                self.send(self.text)
            else:
                self.post_message(self.Submitted(self, self.text))
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

    def _draft_offset(self) -> int:
        row, column = self.cursor_location
        lines = self.text.split("\n")
        return sum(len(line) + 1 for line in lines[:row]) + column

    def completion(self) -> Completion | None:
        draft = self.text
        names = self.commands() if callable(self.commands) else self.commands
        found = complete_command(draft, names)
        if found is None and self.workspace is not None:
            found = complete_path(draft, self._draft_offset(), self.workspace)
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
            offset = found.start + len(replacement)
            before = self.text[:offset].split("\n")
            self.move_cursor((len(before) - 1, len(before[-1])))
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
        if not self.prompts:
            return False
        if self._index is None:
            if step > 0:
                return False
            self._draft = self.text
            index = len(self.prompts) - 1
        else:
            index = self._index + step
            if index >= len(self.prompts):
                self._index = None
                self.value = self._draft
                return True
            index = max(0, index)
        self._index = index
        self.value = self.prompts[index]
        return True
