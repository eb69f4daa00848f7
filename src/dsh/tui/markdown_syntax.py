"""Whether an assistant message is shown as Markdown: it is when its text has Markdown syntax.

Apart from ``dsh.tui.markdown`` so that telling costs no import: Rich's Markdown, its parser and
Pygments load when a reply in Markdown is first laid out, not with the app (a new session's
first frame has none to draw).
"""

from __future__ import annotations

import re

MARKDOWN_SYNTAX = re.compile(
    r"(^|\n)\s{0,3}(#{1,6}\s|[-*+]\s|\d+[.)]\s|>|```|~~~|\|)"  # block syntax at a line start
    r"|`[^`\n]+`|\*\*[^*\n]+\*\*|__[^_\n]+__|\[[^\]\n]+\]\([^)\n]+\)"  # inline syntax
)


def looks_like_markdown(text: str) -> bool:
    return MARKDOWN_SYNTAX.search(text) is not None
