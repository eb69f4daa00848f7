"""What a command printed for a terminal, as the text a terminal would end up showing.

A command run by the ``bash`` tool has no terminal, and most print plain text then; some colour
anyway (``FORCE_COLOR``, ``--color=always``, a test runner in CI mode) or redraw a line with a
carriage return (progress bars, spinners, ``ESC [ 2 K``). On a terminal those bytes paint; in
a tool result they are noise the model pays for, and a progress bar's every state is kept. So
the output the model reads (and the log keeps) is what the terminal would show:

- escape sequences are dropped: CSI (colours, cursor moves, erasing), OSC (a window title, a
  hyperlink — its text stays) and two-byte escapes, and so is an ESC that begins none;
- a carriage return goes back to the start of its line and what follows overwrites what was
  there (a progress bar keeps its last state; CR LF is a line break);
- a backspace goes back one character (overstrike bold, ``a\\ba``, keeps one ``a``).

Other characters, controls included, are kept as they are. ``TerminalText`` does the same to a
stream fed in chunks, with the same result however the stream is cut (a property test holds
it to ``plain_output`` of the whole), holding back an escape sequence a chunk ends inside and
the line in progress. MCP results are a server's text, not a terminal's: they are left alone.
"""

from __future__ import annotations

import re

ESCAPE_SEQUENCE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[@-Z\\-_])"
)
"""An escape sequence (CSI, OSC, or two bytes); an OSC left open ends at its line's end."""
_UNFINISHED = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b\n]*)?\Z")
"""An escape sequence the text ends inside (its rest may come with the next chunk)."""
MAX_HELD_ESCAPE = 512
"""An unfinished sequence longer than this is not held back for its end: it is dropped."""
_MOVES = re.compile(r"([\r\b])")


def plain_output(text: str) -> str:
    """``text`` as a terminal would show it (see the module's docstring)."""
    if "\x1b" not in text and "\r" not in text and "\b" not in text:
        return text
    stream = TerminalText(max_line=None)
    return stream.feed(text) + stream.finish()


class TerminalText:
    """``plain_output`` over a stream: ``feed`` returns the lines it completed (each ending in
    ``\n``) as shown, ``finish`` the last one. Between the two, the line in progress is held
    (``pending`` shows it) and so is an escape sequence a chunk ended inside. With
    ``max_line``, a line in progress longer than that as shown is given out as it stands and a
    new line begins, so an endless progress bar without a newline stays bounded (only then can
    the result differ from ``plain_output`` of the whole)."""

    def __init__(self, max_line: int | None = 65_536) -> None:
        self.max_line = max_line
        self._shown = ""
        """The line in progress as a terminal shows it."""
        self._at = 0
        """The cursor's column in it."""
        self._escape = ""
        """An escape sequence the last chunk ended inside."""

    def feed(self, text: str) -> str:
        """Take the next chunk; returns the lines it completed, as shown."""
        text, self._escape = self._escape + text, ""
        if "\x1b" in text:
            unfinished = _UNFINISHED.match(text, text.rfind("\x1b"))  # only the last can be
            if unfinished is not None:
                held = unfinished.group()
                text = text[: unfinished.start()]
                self._escape = held if len(held) <= MAX_HELD_ESCAPE else ""
            text = ESCAPE_SEQUENCE.sub("", text).replace("\x1b", "")  # and a stray ESC
        if self._at == len(self._shown) and "\r" not in text and "\b" not in text:
            return self._append(text)  # nothing to apply: most output, at C speed
        first, *rest = text.split("\n")
        out = [self._write(first)]
        for line in rest:
            out.append(self._shown + "\n")
            self._shown, self._at = "", 0
            out.append(self._write(line))
        return "".join(out)

    def _append(self, text: str) -> str:
        """``feed`` for text without a carriage return or backspace, the cursor at the end."""
        last = text.rfind("\n")
        if last < 0:
            return self._write(text)
        out, self._shown, self._at = self._shown + text[: last + 1], "", 0
        return out + self._write(text[last + 1 :])

    def pending(self) -> str:
        """The line in progress, as shown so far."""
        return self._shown

    def finish(self) -> str:
        """The last line (an escape sequence left unfinished is dropped); the stream is then
        empty again."""
        line = self._shown
        self._shown, self._at, self._escape = "", 0, ""
        return line

    def _write(self, text: str) -> str:
        """Apply ``text`` (no newline) to the line in progress; returns what a line over
        ``max_line`` gave out."""
        if "\b" not in text and "\r" in text:
            self._redraw(text)
        elif "\r" in text or "\b" in text:
            for part in _MOVES.split(text):
                if part == "\r":
                    self._at = 0
                elif part == "\b":
                    self._at = max(self._at - 1, 0)
                elif part:
                    self._put(part)
        elif text:
            self._put(text)
        if self.max_line is None or len(self._shown) <= self.max_line:
            return ""
        out, self._shown, self._at = self._shown, "", 0
        return out

    def _redraw(self, text: str) -> None:
        """``_write`` of carriage returns without backspaces (a progress bar's redraws), at C
        speed: each part after a carriage return is written from column 0, so a column shows
        the last part that reaches it, found from the last part backwards."""
        first, *parts = text.split("\r")
        self._put(first)
        drawn = parts[-1]
        if len(drawn) < max(map(len, parts)):
            for part in reversed(parts):
                if len(part) > len(drawn):
                    drawn += part[len(drawn) :]
        self._shown = drawn + self._shown[len(drawn) :]
        self._at = len(parts[-1])

    def _put(self, part: str) -> None:
        shown, at = self._shown, self._at
        if at == len(shown):
            self._shown = shown + part
        else:
            self._shown = shown[:at] + part + shown[at + len(part) :]
        self._at = at + len(part)
