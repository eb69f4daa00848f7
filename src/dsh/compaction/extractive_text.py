"""Text helpers of the extractive summariser: prompts and replies of a slice, clipped lines,
sentences, the line holding a literal, anchors minus tool names, focus words."""

from __future__ import annotations

import re
from collections.abc import Sequence

from dsh.compaction.anchors import Anchor, extract_anchors
from dsh.events import Message, PluginSource

BULLET_CHARS = 240
"""Longest bullet the extractive summariser writes."""

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
BULLET_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_RENDER_PREFIX = re.compile(r"^(?:User|Assistant|Tool result(?: \(error\))?): ")
_WORD = re.compile(r"[\w.-]{3,}")
_STOP = frozenset(["the", "and", "for", "with", "that", "this", "from", "into", "keep", "about"])


def is_prompt(message: Message) -> bool:
    """A request the person made: a user message with text that no plugin wrote. An ``@path``
    attachment, a note dsh adds (tool calls written as text, a cut call) or a checkpoint is
    not one: an audit saw an attachment's first line become the state's next step and a line
    of its file a standing constraint."""
    return (
        message.role == "user"
        and not isinstance(message.source, PluginSource)
        and bool(message.text().strip())
    )


def prompts(messages: Sequence[Message]) -> list[str]:
    return [m.text() for m in messages if is_prompt(m)]


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


_FENCE_LINE = re.compile(r"(?:`{3,}|~{3,})[\w+.#-]*")
"""A code fence's opening or closing line (```` ```json ````)."""
_MARKUP_LINE = re.compile(r"[^\w]*")
"""Punctuation alone (``{``, ``]``, ``---``)."""


def said_lines(text: str) -> list[str]:
    """The non-blank lines of ``text``, stripped, that say something: no code fence's line and
    no line of punctuation alone."""
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not _says_nothing(line)]


def _says_nothing(line: str) -> bool:
    return bool(_FENCE_LINE.fullmatch(line) or _MARKUP_LINE.fullmatch(line))


def first_line(text: str) -> str:
    """The first line of ``text`` that says something: never a code fence's line, and a line
    of punctuation alone only when no line has words ("" when ``text`` is only fences). A stub
    quotes it after ``User asked:`` or ``Assistant:``; a quoted fence opener (```` ```json ````)
    made the keyword line under it read as the fenced body of that reply, and small models
    answered the next prompt with a copy of it (docs/local-models.md)."""
    said = said_lines(text)
    if said:
        return said[0]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [line for line in lines if not _FENCE_LINE.fullmatch(line)]
    return lines[0] if lines else ""


def sentences(text: str) -> list[str]:
    parts = (BULLET_MARK.sub("", part).strip() for part in SENTENCE_END.split(text))
    return [part for part in parts if part and not _says_nothing(part)]


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


REVERSAL = re.compile(
    r"\b(?:instead|change of plan|changed our mind|rather than|no longer|switch(?:ed)? to)\b",
    re.IGNORECASE,
)
"""Words with which a later decision says it replaces an earlier one."""
REVERSAL_OVERLAP = 0.6
"""Share of an earlier decision's words a reversal must repeat to be about the same thing."""
_PLAIN_WORD = re.compile(r"[^\W\d_]{3,}")


def reversed_decisions(decisions: Sequence[str]) -> set[int]:
    """Indexes of the ``decisions`` (oldest first) that a later one reverses: the later one
    says so (``instead``, ``change of plan``, …), repeats most of the earlier one's words
    (``REVERSAL_OVERLAP``) and drops a literal the earlier one named — "we will cut the fix from
    release/2025.03" then "change of plan: we will cut the fix from release/2025.04 instead"."""
    reversals = [i for i, text in enumerate(decisions) if REVERSAL.search(text)]
    if not reversals:
        return set()
    words = [set(_PLAIN_WORD.findall(d.lower())) for d in decisions]
    literals: dict[int, set[str]] = {}

    def literals_of(index: int) -> set[str]:  # extracted only for pairs that overlap
        if index not in literals:
            literals[index] = {a.text for a in extract_anchors(decisions[index])}
        return literals[index]

    reversed_: set[int] = set()
    for later in reversals:
        for earlier in range(later):
            shared = len(words[earlier] & words[later])
            if (
                words[earlier]
                and shared >= REVERSAL_OVERLAP * len(words[earlier])
                and literals_of(earlier) - literals_of(later)
            ):
                reversed_.add(earlier)
    return reversed_
