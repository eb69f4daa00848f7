"""ctrl+r in the composer: a search back through the prompt history, as a shell's.

Typing adds to the query and shows the newest prompt holding it (case-insensitively) in the
composer, the match selected; ctrl+r (or up) goes to the next older match, down to the next
newer one; backspace shortens the query and searches again from the newest. enter or right
takes the prompt shown into the composer (not sent); esc (or ctrl+c) puts the draft back as it
was; any other key takes the prompt shown and then does what it does. The composer's border
says the query, the hint line the keys; a query nothing matches says so and keeps the last match
shown. The pure state is :class:`ReverseSearch`; the composer (``dsh.tui.prompt``) applies it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from dsh.errors import printable_line

SearchStep = Literal["shown", "accept", "cancel", "other"]
"""What a key did: the search moved (show it again), the prompt shown is taken, the draft is
put back, or the key is not the search's (take the prompt shown, then do the key)."""
KEYS_HINT = "ctrl+r older · down newer · enter or → takes it · esc puts your draft back"
ACCEPT_KEYS = frozenset({"enter", "right"})
CANCEL_KEYS = frozenset({"escape"})


class ReverseSearch:
    """A search over ``prompts`` (oldest first); ``draft`` is what the composer held."""

    def __init__(self, prompts: Sequence[str], draft: str) -> None:
        self.prompts = prompts
        self.draft = draft
        self.query = ""
        self.index: int | None = None
        """The match shown (an index into ``prompts``); None: the draft is shown."""
        self.missed = ""
        """What the last step did not find ("" when it found its match)."""

    @property
    def shown(self) -> str:
        return self.draft if self.index is None else self.prompts[self.index]

    def span(self, text: str) -> tuple[int, int] | None:
        """Where the query is in ``text``, the prompt shown as the composer holds it (None: no
        match shown, no query, or a text whose case folding moves its characters)."""
        folded = text.casefold()
        if self.index is None or not self.query or len(folded) != len(text):
            return None
        query = self.query.casefold()
        start = folded.find(query)
        return None if start < 0 else (start, start + len(query))

    def title(self) -> str:
        """The composer's border while searching."""
        missed = f" ({self.missed})" if self.missed else ""
        return f"history search: {printable_line(self.query)}▏{missed}"

    def _holds(self, index: int) -> bool:
        return self.query.casefold() in self.prompts[index].casefold()

    def _find(self, indices: range, missed: str = "no match") -> None:
        for index in indices:
            if self._holds(index):
                self.index, self.missed = index, ""
                return
        self.missed = missed

    def type(self, text: str) -> None:
        """Add ``text`` to the query: the match shown if it still holds it, else an older one."""
        self.query += text
        start = len(self.prompts) - 1 if self.index is None else self.index
        self._find(range(start, -1, -1))

    def backspace(self) -> None:
        self.query = self.query[:-1]
        if not self.query:
            self.index, self.missed = None, ""
            return
        self._find(range(len(self.prompts) - 1, -1, -1))

    def older(self) -> None:
        start = len(self.prompts) - 1 if self.index is None else self.index - 1
        self._find(range(start, -1, -1), "no older match")

    def newer(self) -> None:
        if self.index is not None:
            self._find(range(self.index + 1, len(self.prompts)), "no newer match")

    def key(self, key: str, character: str | None) -> SearchStep:
        """Take one key (``character``: what it types, for a printable key)."""
        if key in ACCEPT_KEYS:
            return "accept"
        if key in CANCEL_KEYS:
            return "cancel"
        if key in ("ctrl+r", "up"):
            self.older()
        elif key == "down":
            self.newer()
        elif key == "backspace":
            self.backspace()
        elif character is not None and character.isprintable():
            self.type(character)
        else:
            return "other"
        return "shown"
