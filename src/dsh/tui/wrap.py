"""Plain-text helpers for the transcript: make text safe for a terminal, wrap it, cut it.

Wrapping is greedy on spaces (long words are cut) and measured in terminal cells, with a fast
path for ASCII, because the transcript wraps whole sessions of text.
"""

from __future__ import annotations

import re

from rich.cells import cell_len, chop_cells

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = {c: None for c in (*range(0, 9), *range(11, 32), 127, *range(128, 160))}
_CONTROL[ord("\r")] = None


def sanitize(text: str) -> str:
    """Text without escape sequences or control characters; tabs become four spaces."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if not text.isprintable():
        text = text.translate(_CONTROL)
    return text.expandtabs(4) if "\t" in text else text


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
