"""Assistant messages in Markdown: headings, lists, code fences with syntax colour, inline
code, links (shown with their address). Rows are Rich segments, like every other block's.

Plain prose (no Markdown syntax in it, ``dsh.tui.markdown_syntax``) keeps the fast word wrap:
a long session measures thousands of messages, and Rich's Markdown parser is far slower than
``wrap``. This module is imported when a Markdown reply is first laid out
(``dsh.tui.blocks.markdown_rows``), not with the app.

What ``rich.markdown.Markdown`` builds anew for every document is built once here and reused:
the Markdown parser (parsing keeps no state in it), the Pygments lexer of each code fence's
language and the code theme. The rows are the same as Rich's own ``Markdown`` renders
(``tests/tui/test_markdown_reuse.py`` compares them), for about 0.6 of the CPU time
(``benchmarks/tui_measure.py``).
"""

from __future__ import annotations

import io
import re
from functools import cache, lru_cache
from typing import Any, ClassVar

from markdown_it import MarkdownIt
from markdown_it.token import Token
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Markdown, MarkdownElement
from rich.segment import Segment
from rich.syntax import Syntax, SyntaxTheme

from dsh.tui.markdown_syntax import MARKDOWN_SYNTAX as MARKDOWN_SYNTAX  # said here too
from dsh.tui.markdown_syntax import looks_like_markdown as looks_like_markdown
from dsh.tui.markdown_table import WrappingTableElement

CODE_THEME = "monokai"
TAB_SIZE = 4
"""Rich's ``Syntax`` default, which its lexers are made with."""
TASK_BOX = re.compile(r"\[([ xX])\](?=[ \t])")
"""A task-list item's box at the start of its text (``- [ ] to do``, ``- [x] done``)."""
UNCHECKED, CHECKED = "\u2610", "\u2611"
"""How a task's box shows (the web draws a checkbox): ☐ to do, ☑ done."""
LEXERS_KEPT = 64
"""Lexers kept by language name (a fence's name is the model's text: any string)."""

_console = Console(
    file=io.StringIO(),
    width=200,
    color_system="truecolor",
    force_terminal=True,
    legacy_windows=False,
)


def markdown_rows(text: str, width: int) -> list[list[Segment]]:
    """``text`` rendered as Markdown in ``width`` cells, one list of segments per line
    (trailing blank lines dropped)."""
    return document_rows(ReusingMarkdown(text), width)


def document_rows(document: Markdown, width: int) -> list[list[Segment]]:
    """The rows of a Rich Markdown document, as ``markdown_rows`` gives them."""
    options = _console.options.update_width(max(1, width))
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


@cache
def shared_parser() -> MarkdownIt:
    """The parser ``rich.markdown.Markdown`` makes for each document, made once."""
    return MarkdownIt().enable("strikethrough").enable("table")


@lru_cache(maxsize=LEXERS_KEPT)
def code_lexer(name: str) -> Any:
    """The Pygments lexer Rich's ``Syntax`` looks up for a fence named ``name`` (its plain
    text one for a name Pygments does not know), looked up once."""
    found = Syntax("", name, tab_size=TAB_SIZE)
    return found.lexer or found.default_lexer


@cache
def code_theme(name: str) -> SyntaxTheme:
    return Syntax.get_theme(name)


class ReusingCodeBlock(CodeBlock):
    """Rich's code block, highlighted with the kept lexer and theme."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).rstrip()
        lexer, theme = code_lexer(self.lexer_name), code_theme(self.theme)
        yield Syntax(code, lexer, theme=theme, word_wrap=True, padding=1)


class ReusingMarkdown(Markdown):
    """``Markdown(text, code_theme=CODE_THEME, hyperlinks=False)`` parsed with the shared
    parser, its code blocks highlighted by ``ReusingCodeBlock``."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "fence": ReusingCodeBlock,
        "code_block": ReusingCodeBlock,
        "table_open": WrappingTableElement,
    }

    def __init__(self, markup: str) -> None:
        # Markdown.__init__ would build a parser of its own: set what it sets instead
        self.markup = markup
        self.parsed = shared_parser().parse(markup)
        check_task_boxes(self.parsed)
        self.code_theme = CODE_THEME
        self.justify = None
        self.style = "none"
        self.hyperlinks = False
        self.inline_code_lexer = None
        self.inline_code_theme = CODE_THEME


def check_task_boxes(tokens: list[Token]) -> None:
    """Show a task-list item's ``[ ]`` / ``[x]`` as a box, ☐ / ☑ (GitHub's Markdown, which the
    web renders, makes it a checkbox; the parser here has no task lists)."""
    for at, token in enumerate(tokens[:-2]):
        if token.type != "list_item_open" or tokens[at + 1].type != "paragraph_open":
            continue
        inline = tokens[at + 2]
        first = inline.children[0] if inline.type == "inline" and inline.children else None
        found = (
            TASK_BOX.match(first.content) if first is not None and first.type == "text" else None
        )
        if first is None or found is None:
            continue
        box = UNCHECKED if found.group(1) == " " else CHECKED
        first.content = box + first.content[found.end() :]
        inline.content = box + inline.content[found.end() :]
