"""Plain-text helpers for the transcript: make text safe for a terminal, wrap it, cut it.

Textual sends a widget's text to the terminal as it is, so text from outside (a reply, a tool's
output, a file's name) is made safe first: the transcript drops escape sequences and control
characters (``sanitize``: a tool's coloured output reads as its text); what a person edits
shows each one as its Python escape (``escape_controls``), as one-line fields do
(``dsh.errors.printable_line``). A bidi control, which would reorder what is drawn around it,
shows as its escape (``\\u202e``) in both, and so does a Unicode tag character, which draws
nothing but reads to a model as a letter (a hidden instruction).

Wrapping is greedy on spaces (long words are cut) and measured in terminal cells, with a fast
path for ASCII, because the transcript wraps whole sessions of text.
"""

from __future__ import annotations

import re

from rich.cells import cell_len, chop_cells

from dsh.tools.terminal_text import BIDI_CONTROLS, ESCAPE_SEQUENCE, show_tags

_CONTROL: dict[int, str | None] = {
    c: None for c in (*range(0, 9), *range(11, 32), 127, *range(128, 160))
}
_CONTROL.update({c: ascii(chr(c))[1:-1] for c in BIDI_CONTROLS})  # shown, not dropped
_TERMINAL_CONTROL = re.compile(
    r"[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f" + "".join(map(chr, BIDI_CONTROLS)) + "]"
)
"""What a terminal would act on, but tabs and the line breaks ``str.splitlines`` splits at."""


def sanitize(text: str) -> str:
    """Text without escape sequences or control characters, a bidi control or a tag character
    shown as its escape; tabs become four spaces."""
    if "\x1b" in text:
        text = ESCAPE_SEQUENCE.sub("", text)
    if not text.isprintable():
        text = show_tags(text.translate(_CONTROL))
    return text.expandtabs(4) if "\t" in text else text


def escape_controls(text: str) -> str:
    """``text`` with each character a terminal would act on (a C0 or C1 control, DEL, a bidi
    control) as its Python escape (``\\x1b``), but tabs and line breaks: a draft shows, and
    sends, what a paste or a recalled prompt held."""
    return show_tags(_TERMINAL_CONTROL.sub(lambda found: ascii(found.group())[1:-1], text))


def _fits(line: str, width: int) -> bool:
    if line.isascii():
        return len(line) <= width
    return cell_len(line) <= width


def _cut_word(word: str, width: int) -> list[str]:
    """A word wider than ``width`` as pieces of at most ``width`` cells."""
    if word.isascii():
        return [word[i : i + width] for i in range(0, len(word), width)]
    return chop_cells(word, width)


def wrap(text: str, width: int) -> list[str]:
    """``text`` as lines of at most ``width`` cells (every newline starts a line)."""
    width = max(1, width)
    out: list[str] = []
    for para in text.split("\n"):
        para = para.rstrip()
        if _fits(para, width):
            out.append(para)
            continue
        line = ""
        for word in para.split(" "):
            candidate = f"{line} {word}" if line else word
            if _fits(candidate, width):
                line = candidate
                continue
            if line:
                out.append(line)
            if _fits(word, width):
                line = word
            else:
                *pieces, line = _cut_word(word, width)
                out.extend(pieces)
        out.append(line)
    return out


def one_line(text: str, width: int) -> str:
    """The first line of ``text`` with runs of spaces collapsed, cut to ``width`` cells
    (ending in "…" when something was cut)."""
    first, newline, _ = text.strip().partition("\n")
    flat = " ".join(first.split())
    cut = bool(newline)
    if not _fits(flat, width):
        flat = chop_cells(flat, max(1, width - 1))[0]
        cut = True
    if cut:
        if not _fits(flat + "…", width):
            flat = chop_cells(flat, max(1, width - 1))[0]
        flat += "…"
    return flat
