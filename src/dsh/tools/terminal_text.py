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

Text dsh prints for people is another matter: a reply, a file ``read_file`` read, a log's
workspace are not a terminal's output, and a terminal must not act on what they hold (set its
title, write the clipboard with OSC 52, clear the screen, overwrite a line with a carriage
return). ``printable_text`` is how the CLI prints such text (``dsh sessions show`` and
``export``, ``dsh run``'s answer, ``dsh recall``, the import report), the multi-line sibling of
``dsh.errors.printable_line``: escape sequences dropped as above, every other control character
but the newline and the tab shown as its Python escape (``\\x07``, ``\\x9b``, a lone
carriage return as ``\\r``; CR LF is a newline), a bidi control and a Unicode tag character
too (``show_tags``), as the terminal UI shows them; other text, emoji included, as it is.
JSON the CLI prints (``dsh run --json`` and ``--json-stream``, ``dsh sessions show --view
events``) goes through ``terminal_json``: the same JSON, with what a terminal would act on in
its strings as ``\\u`` escapes.
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

BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""Unicode's Bidi_Control characters: each reorders what a terminal draws around it."""
_TAGS = re.compile("(\U0001f3f4[\U000e0020-\U000e007e]{1,6}\U000e007f)|[\U000e0000-\U000e007f]")
"""A Unicode tag character (U+E0000-U+E007F), but in a subdivision flag (🏴 and a tag run
ending in CANCEL TAG): invisible, yet a model reads each as the ASCII letter it shadows, so a
file or a web page can hide an instruction in them ("ASCII smuggling")."""
_ANY_TAG = re.compile("[\U000e0000-\U000e007f]")
_SHOWN_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + "".join(map(chr, BIDI_CONTROLS)) + "]")
"""What ``printable_text`` shows as its escape: every C0 and C1 control but the newline and
the tab, DEL, a bidi control."""
_SHOWN = re.compile(f"{_SHOWN_CONTROL.pattern}|{_ANY_TAG.pattern}")
"""Either, or a tag character: what ``printable_text`` changes."""


def printable_text(text: str) -> str:
    """``text``, of any number of lines, as a terminal can be given it (the module's
    docstring): no escape sequence, no control character but newlines and tabs, each other one
    (and a bidi control, a tag character) shown as its Python escape; CR LF as a newline."""
    if "\x1b" in text:
        text = ESCAPE_SEQUENCE.sub("", text)
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if _SHOWN.search(text) is None:  # most text: one scan, at C speed
        return text
    return show_tags(_SHOWN_CONTROL.sub(_escaped, text))


def _escaped(found: re.Match[str]) -> str:
    return ascii(found.group())[1:-1]


_RAW_IN_JSON = re.compile("[\x7f-\x9f" + "".join(map(chr, BIDI_CONTROLS)) + "]")
"""What a terminal acts on that JSON may hold unescaped: DEL, a C1 control, a bidi control."""


def terminal_json(text: str) -> str:
    """JSON ``text`` with each DEL, C1 control and bidi control in it as its ``\\u`` escape:
    the same JSON value, nothing a terminal acts on (msgspec and ``json.dumps`` escape the C0
    controls themselves, but write these as they are: ``\\x9b`` is a CSI to xterm). Outside a
    string JSON is ASCII, so every one found is inside a string."""
    if _RAW_IN_JSON.search(text) is None:
        return text
    return _RAW_IN_JSON.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


class PrintableStream:
    """``printable_text`` over a stream (a reply as it streams): ``feed`` returns what can be
    shown of the chunks so far, holding back an escape sequence a chunk ends inside and a
    carriage return it ends with (the line feed of a CR LF may come next), so a sequence cut
    between chunks is dropped whole, as from the whole text; ``finish`` gives out what is
    held."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        text, self._held = self._held + text, ""
        if "\x1b" in text:
            unfinished = _UNFINISHED.match(text, text.rfind("\x1b"))
            if unfinished is not None and len(unfinished.group()) <= MAX_HELD_ESCAPE:
                text, self._held = text[: unfinished.start()], unfinished.group()
        if text.endswith("\r"):
            text, self._held = text[:-1], "\r" + self._held
        return printable_text(text)

    def finish(self) -> str:
        held, self._held = self._held, ""
        return printable_text(held)


def show_tags(text: str) -> str:
    """``text`` with each tag character shown as its escape, flags kept."""
    if text.isascii() or _ANY_TAG.search(text) is None:  # a search: several times max()'s speed
        return text
    return _TAGS.sub(lambda found: found.group(1) or ascii(found.group())[1:-1], text)


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
