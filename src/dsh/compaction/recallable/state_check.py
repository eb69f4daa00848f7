"""Validating a state rewrite (the state is the one hard model dependency).

A state answer is checked before it can replace the previous state (docs/compaction.md,
"Checkpoints hold only what the conversation said"):

- it must be a state at all: at least one of the required sections, and no echo of an
  instruction's schematic example — else the call is retried once, then the pass fails cleanly;
  a required section's heading is read however a small model writes it (``## Goal: text``,
  ``**Goal:**``, ``Goal:`` alone on its line, ``### Next step``) and written ``## Goal``;
- every required section is present: one the answer dropped (absent, or a heading with nothing
  under it) is merged in code from the previous state's section, or says ``(none)``;
- a line naming a literal that occurs neither in the input span nor in the previous state (an
  invented id, a copied example, a count or date no message gave) is dropped, so an invented
  literal never becomes state.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dsh.compaction.anchors import literals_said_in
from dsh.compaction.extractive import STATE_SECTIONS
from dsh.compaction.prompts import echoes_example
from dsh.errors import ProviderError

NONE = "(none)"

_Block = tuple[str | None, list[str]]
"""A heading (lower-cased section name; None before the first heading) and its raw lines."""

_SECTION_HEADING = re.compile(
    r"^\s*(?P<hashes>#{1,6})?\s*(?P<bold>\*\*|__)?\s*"
    r"(?P<name>goal|decisions|current\s+state|constraints|next\s+steps?)\s*"
    r"(?:\*\*|__)?\s*(?P<colon>[:：])?\s*(?:\*\*|__)?\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
"""A required section's heading as models write it: ``## Goal``, ``## Goal: ship it``,
``**Next steps:**``, ``Constraints:``. What follows the heading on its line is its first line."""

_TITLES = {" ".join(name.lower().split()): name for name in STATE_SECTIONS}


def check_state(text: str, *, source: str, previous: str | None) -> str:
    """``text`` validated against ``source`` (the rendered input span, the previous state and
    the focus); raises ``ProviderError`` when it cannot be a state."""
    if echoes_example(text, source):
        raise ProviderError("INVALID_RESPONSE", "the state rewrite repeats an instruction example")
    blocks = _blocks(text)
    by_name = {name: lines for name, lines in blocks if name is not None}
    required = [name.lower() for name in STATE_SECTIONS]
    if not any(name in by_name for name in required):
        raise ProviderError(
            "INVALID_RESPONSE",
            "the state rewrite has none of its sections (## " + ", ## ".join(STATE_SECTIONS) + ")",
        )
    earlier = {name: lines for name, lines in _blocks(previous or "") if name is not None}
    out: list[str] = []
    lead = [lines for name, lines in blocks if name is None]
    for lines in lead:
        out.extend(_verified(lines, source))
    for title, key in zip(STATE_SECTIONS, required, strict=True):
        lines = _verified(by_name.get(key, []), source)
        if not _has_content(lines[1:]):
            kept = earlier.get(key, [])
            body = kept[1:] if _has_content(kept[1:]) else [NONE]
            lines = [f"## {title}", *_strip_blank(body)]
        out.extend(lines)
    for name, lines in blocks:
        if name is not None and name not in required:
            out.extend(_verified(lines, source))
    return "\n".join(out).strip()


def section_heading(line: str) -> tuple[str, str] | None:
    """``(section title, text after it)`` when ``line`` is a required section's heading: marked
    as one (``#``, bold, or a colon after the name) or the bare name alone on its line. A line
    that only starts with the word (``Constraints are tight``) is no heading."""
    match = _SECTION_HEADING.match(line)
    if match is None:
        return None
    rest = match.group("rest").strip()
    if not (match.group("hashes") or match.group("bold") or match.group("colon") or not rest):
        return None
    name = " ".join(match.group("name").lower().split())
    return _TITLES.get(name) or _TITLES[name + "s"], rest


def _blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = [(None, [])]
    for line in text.splitlines():
        heading = section_heading(line)
        if heading is not None:
            title, rest = heading
            blocks.append((title.lower(), [f"## {title}", *([rest] if rest else [])]))
        elif line.startswith("## "):
            blocks.append((line[3:].strip().lower(), [line]))
        else:
            blocks[-1][1].append(line)
    return [block for block in blocks if block[0] is not None or _has_content(block[1])]


def _verified(lines: Sequence[str], source: str) -> list[str]:
    """``lines`` without those naming a literal ``source`` never said (headings stay)."""
    return [line for line in lines if line.startswith("## ") or literals_said_in(line, source)]


def _has_content(lines: Sequence[str]) -> bool:
    return any(line.strip() for line in lines)


def _strip_blank(lines: Sequence[str]) -> list[str]:
    kept = list(lines)
    while kept and not kept[-1].strip():
        kept.pop()
    return kept
