"""Assistant messages in Markdown: headings, lists, code fences with syntax colour, inline
code, links (shown with their address). Rows are Rich segments, like every other block's.

Plain prose (no Markdown syntax in it) keeps the fast word wrap: a long session measures
thousands of messages, and Rich's Markdown parser is far slower than ``wrap``.
"""

from __future__ import annotations

import io
import re

from rich.console import Console
from rich.markdown import Markdown
from rich.segment import Segment

MARKDOWN_SYNTAX = re.compile(
    r"(^|\n)\s{0,3}(#{1,6}\s|[-*+]\s|\d+[.)]\s|>|```|~~~|\|)"  # block syntax at a line start
    r"|`[^`\n]+`|\*\*[^*\n]+\*\*|__[^_\n]+__|\[[^\]\n]+\]\([^)\n]+\)"  # inline syntax
)
CODE_THEME = "monokai"

_console = Console(
    file=io.StringIO(),
    width=200,
    color_system="truecolor",
    force_terminal=True,
    legacy_windows=False,
)


def looks_like_markdown(text: str) -> bool:
    return MARKDOWN_SYNTAX.search(text) is not None


def markdown_rows(text: str, width: int) -> list[list[Segment]]:
    """``text`` rendered as Markdown in ``width`` cells, one list of segments per line
    (trailing blank lines dropped)."""
    options = _console.options.update_width(max(1, width))
    document = Markdown(text, code_theme=CODE_THEME, hyperlinks=False)
    lines = _console.render_lines(document, options, pad=False)
    rows = [_rstrip([segment for segment in line if not segment.control]) for line in lines]
    while rows and not "".join(s.text for s in rows[-1]).strip():
        rows.pop()
    return rows


def _rstrip(line: list[Segment]) -> list[Segment]:
    """Drop the padding Rich adds after a line's text (kept where it paints a background,
    as in a code block)."""
    while line:
        last = line[-1]
        if last.style is not None and last.style.bgcolor is not None:
            break
        kept = last.text.rstrip()
        if kept:
            line[-1] = Segment(kept, last.style)
            break
        line.pop()
    return line
