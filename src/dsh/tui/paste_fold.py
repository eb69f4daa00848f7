"""A long paste shows in the composer as one placeholder, ``[pasted 200 lines]``, and is sent
(and logged, and kept in the prompt history) as its whole text.

A paste of more than :data:`FOLD_OVER` lines is folded; a second one of the same length is
``[pasted 200 lines #2]``. A placeholder is one piece: an edit that deletes any part of it
(backspace after it, a selection across it) deletes all of it, and the paste with it (ctrl+z
brings both back); text typed inside it goes after it. Text typed that merely looks like a
placeholder is sent as typed. A draft that leaves the box another way (sent, queued, opened in
your editor) goes as its whole text; one that comes back (a prompt refused as too long, a
queued draft taken back) shows its long pastes as placeholders again (``refold``), and so does
a prompt recalled from the history (up / down, ctrl+r): the history keeps where each prompt's
long pastes are (``spans_in``; ``dsh.config.prompt_history``), and a recalled prompt shows them
folded (``fold_spans``), sent whole as the original was.

A paste's line breaks are line feeds whatever the terminal sent: tmux, xterm, VTE and iTerm2
send a bracketed paste's line breaks as carriage returns (``line_breaks``).
"""

from __future__ import annotations

import re

FOLD_OVER = 20
"""Pastes of more lines than this are folded."""
KEPT_GONE = 8
"""Pastes of drafts that left the box kept to fold again should a draft come back."""


def line_breaks(text: str) -> str:
    """``text`` with each CR LF and each lone CR as a LF (as a paste's line breaks)."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


class PasteFolds:
    """The pastes folded in one composer: each placeholder and the text it stands for."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self._gone: dict[str, None] = {}
        """The pastes of drafts that left the box, oldest first (``refold``)."""

    def fold(self, text: str) -> str | None:
        """The placeholder for ``text`` (None: short enough to show as it is)."""
        lines = len(text.rstrip("\n").split("\n"))
        if lines <= FOLD_OVER:
            return None
        label, count = f"[pasted {lines} lines]", 1
        while label in self.texts:
            count += 1
            label = f"[pasted {lines} lines #{count}]"
        self.texts[label] = text
        return label

    def _pattern(self) -> re.Pattern[str] | None:
        if not self.texts:
            return None
        return re.compile("|".join(re.escape(label) for label in self.texts))

    def expand(self, draft: str) -> str:
        """``draft`` with each placeholder in it replaced by its paste."""
        pattern = self._pattern()
        if pattern is None:
            return draft
        return pattern.sub(lambda found: self.texts[found.group()], draft)

    def widen(self, draft: str, start: int, end: int) -> tuple[int, int]:
        """The range an edit of ``draft[start:end]`` takes: one that cuts into a placeholder
        takes all of it; an insertion inside one goes after it (the placeholder stays whole)."""
        pattern = self._pattern()
        if pattern is None:
            return start, end
        for found in pattern.finditer(draft):
            if start == end and found.start() < start < found.end():
                return found.end(), found.end()
            if found.start() < end and start < found.end():
                start, end = min(start, found.start()), max(end, found.end())
        return start, end

    def refold(self, draft: str) -> str:
        """``draft`` (one that left the box and came back) with each long paste it held as
        a placeholder again."""
        for text in reversed(self._gone):
            while text in draft:
                label = self.fold(text)
                if label is None:
                    break
                draft = draft.replace(text, label, 1)
        return draft

    def spans_in(self, text: str) -> tuple[tuple[int, int], ...]:
        """Where the long pastes this composer folded (in the draft, or in drafts that left
        it) are in ``text`` (a sent prompt), in order, none overlapping; a paste that ended the
        draft counts without its last line breaks (a sent prompt's end is stripped)."""
        found: list[tuple[int, int]] = []
        for paste in {*self.texts.values(), *self._gone}:
            for sought in {paste, paste.rstrip()}:
                start = text.find(sought) if sought else -1
                while start >= 0:
                    found.append((start, start + len(sought)))
                    start = text.find(sought, start + len(sought))
        spans: list[tuple[int, int]] = []
        for start, end in sorted(found, key=lambda span: (span[0], -span[1])):
            if not spans or start >= spans[-1][1]:
                spans.append((start, end))
        return tuple(spans)

    def fold_spans(self, text: str, spans: tuple[tuple[int, int], ...]) -> str:
        """``text`` with each of its ``spans`` (from ``spans_in``) shown as a placeholder, as
        when it was pasted (one of ``FOLD_OVER`` lines or fewer shows as it is)."""
        parts, at = [], 0
        for start, end in spans:
            pasted = text[start:end]
            parts += [text[at:start], self.fold(pasted) or pasted]
            at = end
        return "".join([*parts, text[at:]])

    def clear(self) -> None:
        """The draft left the box: its pastes are kept a while for ``refold``."""
        for text in self.texts.values():
            self._gone.pop(text, None)
            self._gone[text] = None
        for text in list(self._gone)[:-KEPT_GONE]:
            del self._gone[text]
        self.texts.clear()
