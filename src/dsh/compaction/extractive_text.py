"""Text helpers of the extractive summariser: prompts and replies of a slice, clipped lines,
sentences, the line holding a literal, anchors minus tool names, focus words."""

from __future__ import annotations

import re
from collections.abc import Sequence

from dsh.compaction.anchors import Anchor, extract_anchors
from dsh.events import Message

BULLET_CHARS = 240
"""Longest bullet the extractive summariser writes."""

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
BULLET_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_RENDER_PREFIX = re.compile(r"^(?:User|Assistant|Tool result(?: \(error\))?): ")
_WORD = re.compile(r"[\w.-]{3,}")
_STOP = frozenset(["the", "and", "for", "with", "that", "this", "from", "into", "keep", "about"])


def prompts(messages: Sequence[Message]) -> list[str]:
    return [m.text() for m in messages if m.role == "user" and m.text().strip()]


def replies(messages: Sequence[Message]) -> list[str]:
    return [m.text() for m in messages if m.role == "assistant" and m.text().strip()]


def clip(text: str, limit: int = BULLET_CHARS) -> str:
    """``text`` stripped and cut at a word boundary to at most ``limit`` characters."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def sentences(text: str) -> list[str]:
    parts = (BULLET_MARK.sub("", part).strip() for part in SENTENCE_END.split(text))
    return [part for part in parts if part]


def line_of(text: str, literal: str) -> str:
    """The line of ``text`` holding ``literal`` (render prefix removed), or the literal alone."""
    for line in text.splitlines():
        if literal in line:
            line = _RENDER_PREFIX.sub("", line.strip())
            return line if len(line) <= BULLET_CHARS else literal
    return literal


def tool_names(material: Sequence[Message]) -> set[str]:
    return {call.name for message in material for call in message.tool_calls()}


def anchors(text: str, tools: set[str]) -> list[Anchor]:
    """The anchors of ``text``, minus tool names (``[tool call: read_file(…)]`` is no id)."""
    return [a for a in extract_anchors(text) if not (a.kind == "id" and a.text in tools)]


def focus_words(focus: str | None) -> list[str]:
    words = _WORD.findall(focus or "")
    return [w.lower() for w in words if w.lower() not in _STOP]


def mentions(text: str, words: Sequence[str]) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in words)
