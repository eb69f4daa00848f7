"""The terminal's input read as Textual events, every bracketed paste whole.

A terminal wraps pasted text in ``ESC [200~`` … ``ESC [201~``. Textual's input parser reads
escape sequences inside a paste too, so an ESC in the pasted text (a colour code copied from a
terminal) ended the paste there: the text before it was lost, the ESC and what followed it were
sent at once as a prompt, and the rest arrived as keystrokes, every line break an enter that
sent or queued another prompt, under two lines a second (5,000 pasted lines took about an hour).

:class:`PasteSplitter` takes each paste out of the input before the parser sees it, so a paste
becomes one ``Paste`` event with every character it had (the composer shows an ESC in it as
``\\x1b``); the rest of the input (keys, mouse, the terminal's answers) goes to Textual's
parser as before (:class:`TerminalInput`).

- The markers may be split between two reads. A read that ends in the first characters of
  ``ESC [200~`` is held back until the next read, or for as long as the parser waits to tell an
  escape key from the start of a sequence (``ESCAPE_DELAY``): a lone ESC held that long is the
  escape key, at once.
- A paste is posted whole up to :data:`PASTE_PIECE` characters; a longer one in pieces of that
  size as it arrives, in order (the composer joins them), so the reader holds no more than that.
- A paste whose end marker never comes (a terminal that dropped it) ends when no input has come
  for :data:`PASTE_IDLE` seconds: what it had is posted, and what follows is read as keys again.
  Terminals send a paste in one go, so only a lost marker waits that long; while it waits, keys
  typed join the paste (they show in the draft, an enter as a line break, nothing is sent).
- A NUL in a paste is dropped, as Textual does (some terminals pad pastes with them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from textual import constants, events
from textual._xterm_parser import XTermParser
from textual.message import Message

PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
ESC = "\x1b"
PASTE_IDLE = 5.0
"""Seconds without input after which a paste whose end marker has not come is taken as ended."""
PASTE_PIECE = 4 * 1024 * 1024
"""Characters of a paste posted at most in one ``Paste`` event."""


@dataclass(frozen=True, slots=True)
class Keys:
    """Input outside a paste, for Textual's parser."""

    text: str
    settled: bool = False
    """Nothing followed it within the escape delay (a held-back ESC is the escape key)."""


@dataclass(frozen=True, slots=True)
class Pasted:
    """Pasted text (all of a paste, or one piece of a long one)."""

    text: str


def _marker_start(text: str, marker: str) -> int:
    """How many characters at the end of ``text`` begin ``marker`` (0: none)."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:size]):
            return size
    return 0


class PasteSplitter:
    """Splits decoded terminal input into :class:`Keys` and :class:`Pasted` pieces, in order.

    ``now`` is the time (seconds, monotonic) the input arrived or the check runs; the splitter
    holds no clock of its own. ``hold`` is how long a read's end that may begin a paste waits
    for the rest of it (``ESCAPE_DELAY``)."""

    def __init__(self, *, hold: float, idle: float = PASTE_IDLE, piece: int = PASTE_PIECE) -> None:
        self._hold = hold
        self._idle = idle
        self._piece = piece
        self._held = ""
        """Outside a paste: the end of the input that may begin ``PASTE_START``."""
        self._pasting = False
        self._parts: list[str] = []
        self._size = 0
        self._tail = ""
        """Inside a paste: the end of the input that may begin ``PASTE_END``."""
        self._last_input = 0.0

    @property
    def pasting(self) -> bool:
        """Inside a paste, waiting for its end marker."""
        return self._pasting

    def deadline(self) -> float | None:
        """When :meth:`expire` has something to give (None: only more input can change it)."""
        if self._pasting:
            return self._last_input + self._idle
        if self._held:
            return self._last_input + self._hold
        return None

    def feed(self, text: str, now: float) -> list[Keys | Pasted]:
        """The pieces ``text`` completes, in order; an unfinished paste or marker is kept."""
        pieces: list[Keys | Pasted] = []
        self._last_input = now
        while text:
            text = self._in_paste(text, pieces) if self._pasting else self._in_keys(text, pieces)
        return pieces

    def expire(self, now: float) -> list[Keys | Pasted]:
        """What waited too long: a paste with no end marker after ``idle`` seconds without
        input (posted as it is), or a held-back marker start after ``hold`` seconds (keys)."""
        deadline = self.deadline()
        if deadline is None or now < deadline:
            return []
        return self.finish()

    def finish(self) -> list[Keys | Pasted]:
        """Everything still kept, now (the input has ended, or waited too long)."""
        pieces: list[Keys | Pasted] = []
        if self._pasting:
            self._pasting = False
            self._add(self._tail, pieces)
            self._tail = ""
            self._flush(pieces)
        elif self._held:
            pieces.append(Keys(self._held, settled=True))
            self._held = ""
        return pieces

    def _in_keys(self, text: str, pieces: list[Keys | Pasted]) -> str:
        text, self._held = self._held + text, ""
        start = text.find(PASTE_START)
        if start >= 0:
            if start:
                pieces.append(Keys(text[:start]))
            self._pasting = True
            return text[start + len(PASTE_START) :]
        keep = _marker_start(text, PASTE_START)
        if keep:
            text, self._held = text[:-keep], text[-keep:]
        if text:
            pieces.append(Keys(text))
        return ""

    def _in_paste(self, text: str, pieces: list[Keys | Pasted]) -> str:
        text, self._tail = self._tail + text, ""
        end = text.find(PASTE_END)
        if end >= 0:
            self._add(text[:end], pieces)
            self._flush(pieces)
            self._pasting = False
            return text[end + len(PASTE_END) :]
        keep = _marker_start(text, PASTE_END)
        if keep:
            text, self._tail = text[:-keep], text[-keep:]
        self._add(text, pieces)
        return ""

    def _add(self, text: str, pieces: list[Keys | Pasted]) -> None:
        """Keep ``text`` in the paste; post whole pieces once ``piece`` characters are kept
        (never between a CR and the LF after it, which make one line break)."""
        if not text:
            return
        self._parts.append(text)
        self._size += len(text)
        while self._size > self._piece:
            kept, cut = "".join(self._parts), self._piece
            if cut > 1 and kept[cut - 1] == "\r":
                cut -= 1
            pieces.append(Pasted(kept[:cut].replace("\x00", "")))
            self._parts, self._size = [kept[cut:]], len(kept) - cut

    def _flush(self, pieces: list[Keys | Pasted]) -> None:
        text = "".join(self._parts).replace("\x00", "")
        self._parts, self._size = [], 0
        if text:
            pieces.append(Pasted(text))


class TerminalInput:
    """Decoded terminal input in, Textual messages out to ``post``, in the order typed:
    pastes whole (:class:`PasteSplitter`), everything else through Textual's parser.

    ``clock`` times the held-back marker starts and a paste's wait for its end marker (a test
    passes its own); call :meth:`tick` at least every :meth:`timeout` seconds."""

    def __init__(
        self,
        post: Callable[[Message], None],
        *,
        clock: Callable[[], float] = time.monotonic,
        debug: bool = False,
    ) -> None:
        self._post = post
        self._clock = clock
        self._splitter = PasteSplitter(hold=constants.ESCAPE_DELAY)
        self._parser = XTermParser(debug)

    def feed(self, text: str) -> None:
        """Post what ``text`` completes."""
        self._send(self._splitter.feed(text, self._clock()))

    def tick(self) -> None:
        """Post what waited long enough: an escape key, a paste whose end never came."""
        self._send(self._splitter.expire(self._clock()))
        self._post_all(self._parser.tick())

    def timeout(self, longest: float) -> float:
        """Seconds until :meth:`tick` has something to do, at most ``longest``."""
        deadline = self._splitter.deadline()
        if deadline is None:
            return longest
        return max(0.0, min(longest, deadline - self._clock()))

    def finish(self) -> None:
        """The input has ended: post what was kept back."""
        self._send(self._splitter.finish())
        self._settle()

    def _send(self, pieces: Iterable[Keys | Pasted]) -> None:
        for piece in pieces:
            if isinstance(piece, Keys):
                self._post_all(self._parser.feed(piece.text))
                if piece.settled and piece.text == ESC:
                    self._settle()
            else:
                self._settle()  # keys typed before the paste come before it
                self._post(events.Paste(piece.text))

    def _settle(self) -> None:
        """End the sequence the parser has begun, if any, as if its wait had run out: a lone
        ESC is the escape key. The parser is given a paste's end marker, which it takes as
        ending a sequence and otherwise ignores (it never saw a start marker)."""
        self._post_all(self._parser.feed(PASTE_END))

    def _post_all(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self._post(message)
