"""Turning summariser answers into checkpoint text: stubs, pointers, the state.

A stub answer that is junk — empty, over-long, footer-like, a copy of its slice, or prose whose
every line names a literal the slice never said — degrades that stub to a code pointer stub
(``degraded: "fallback"``); it never breaks the layout. A prose line naming such a literal is
dropped from a stub that is kept, as the keyword line drops one. The
state is the only hard model dependency: a failed or empty state aborts the pass
(docs/compaction.md, "Failure handling").
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence

from dsh.compaction.anchors import (
    Anchor,
    extract_anchors,
    keyword_line,
    literals_said_in,
    merge_keyword_lines,
    parse_keyword_line,
    split_config,
)
from dsh.compaction.base import RegionPlan, RegionText
from dsh.compaction.prompts import echoes_example
from dsh.compaction.recallable.state_check import check_state
from dsh.compaction.summarizer import SummaryOutput
from dsh.errors import ProviderError
from dsh.events import Degraded, Message
from dsh.transcript import render_message

KEYWORD_LINE_CHARS = 400
REPLACED_KIND = "replaced"
"""The keyword-line group that lists a checkpoint's superseded literals (``mark_replaced``)."""
MAX_STUB_LINES = 3
OVERLONG_FACTOR = 3
"""A stub answer longer than ``stub_tokens`` × this is junk (a copy, or a runaway answer)."""
COPY_CHARS = 160
"""A stub answer holding this many characters of its slice verbatim is a copy."""

_FOOTER_LIKE = re.compile(r"\[checkpoint c\d+|shadows conversation span|</?compacted-", re.I)
"""Code's own framing: a footer, or a ``<compacted-…>`` tag, opening or closing (a closing tag
in an answer would end the checkpoint's frame early, and what follows would read as outside
it)."""


def slice_text(messages: Sequence[Message]) -> str:
    return "\n".join(render_message(m) for m in messages)


def stub_text(region: RegionPlan, output: SummaryOutput) -> RegionText:
    """A stub from the model's answer (one ``junk_reason`` accepted): its prose lines, and its
    keyword line keeping only literals that occur in the slice, merged with the code anchors."""
    task = region.task
    assert task is not None
    body = output.text.strip()
    source = slice_text(task.messages)
    lines = [line for line in body.splitlines() if line.strip()]
    model_line = next((line for line in lines if line.startswith("Keywords")), "")
    prose = [line for line in _prose(body) if said_in(line, source)][:MAX_STUB_LINES]
    keywords = merge_keyword_lines(
        model_line, region.anchors, source=source, max_chars=KEYWORD_LINE_CHARS
    )
    return RegionText(
        kind="index",
        shadowed_seqs=region.shadowed_seqs,
        summary=mark_replaced(
            "\n".join([*prose, keywords] if keywords else prose), dict(region.replaced)
        ),
        provider=output.provider,
        model=output.model,
        usage=output.usage,
        raw_output=output.raw_output,
    )


def junk_reason(body: str, messages: Sequence[Message], stub_tokens: int) -> str | None:
    """Why a stub answer cannot be used (None when it can)."""
    if not body:
        return "empty"
    if len(body) > stub_tokens * 4 * OVERLONG_FACTOR:
        return "over-long"
    if _FOOTER_LIKE.search(body):
        return "footer-like"
    rendered = slice_text(messages)
    if echoes_example(body, rendered):
        return "an echo of the instruction's example"
    flat = " ".join(body.split())
    source = " ".join(rendered.split())
    if len(flat) >= 40 and flat in source:
        return "a copy of the slice"
    copied = _copied_chars(body, source)
    if copied >= COPY_CHARS and copied * 5 >= len(flat) * 4:
        return "a copy of the slice"
    prose = _prose(body)
    if prose and not any(said_in(line, rendered) for line in prose):
        return "literals its slice never said"
    return None


def _prose(body: str) -> list[str]:
    """The non-blank lines of a stub answer other than keyword lines."""
    return [line for line in body.splitlines() if line.strip() and not line.startswith("Keywords")]


def said_in(line: str, source: str) -> bool:
    """True when every literal ``line`` names (``literals_said_in``: anchors and numbers)
    occurs in ``source``: a prose line of a stub naming an invented id, path, value, count or
    date never reaches a frozen stub."""
    return literals_said_in(line, source)


def _copied_chars(body: str, source: str) -> int:
    """Characters of the answer's lines that occur verbatim in the slice."""
    lines = (" ".join(line.split()) for line in body.splitlines())
    return sum(len(line) for line in lines if len(line) >= 20 and line in source)


def pointer(region: RegionPlan, degraded: Degraded, what: str | None) -> RegionText:
    """A code-only stub: one line, and the slice's rarest literals."""
    seqs = region.shadowed_seqs
    description = what or f"{len(seqs)} earlier messages (no summary could be written)"
    lines = [f"Earlier conversation: {description}."]
    line = keyword_line(region.anchors, max_chars=KEYWORD_LINE_CHARS)
    if line:
        lines.append(line)
    return RegionText(
        kind="index",
        shadowed_seqs=seqs,
        summary=mark_replaced("\n".join(lines), dict(region.replaced)),
        provider="code",
        model="pointer",
        degraded=degraded,
    )


def state_text(
    region: RegionPlan,
    output: SummaryOutput,
    state_max_tokens: int,
    *,
    source: str,
    previous: str | None,
) -> RegionText:
    """The state from the model's answer: footer-like lines dropped (code writes the footer),
    validated against ``source`` and ``previous`` (``check_state``), capped at
    ``state_max_tokens``; nothing left, or no state at all, is a failure."""
    lines = [line for line in output.text.strip().splitlines() if not _FOOTER_LIKE.search(line)]
    text = "\n".join(lines).strip()
    if not text:
        raise ProviderError("INVALID_RESPONSE", "the state rewrite returned no text")
    text = mark_replaced(check_state(text, source=source, previous=previous), dict(region.replaced))
    return RegionText(
        kind="state",
        shadowed_seqs=region.shadowed_seqs,
        summary=cap(text, state_max_tokens),
        provider=output.provider,
        model=output.model,
        input_range=region.input_range,
        usage=output.usage,
        raw_output=output.raw_output,
    )


def cap(text: str, max_tokens: int) -> str:
    limit = max_tokens * 4
    return text if len(text) <= limit else text[:limit].rstrip() + "\n[state truncated]"


def superseded_values(texts: Sequence[str]) -> dict[str, str]:
    """``old literal -> newest literal`` for every ``key = value`` setting of ``texts`` (in
    order) whose value changed later on: what a checkpoint must not present as current."""
    latest: dict[str, tuple[str, str]] = {}
    seen: dict[str, dict[str, str]] = {}
    for text in texts:
        for anchor in extract_anchors(text, kinds=("config",)):
            parts = split_config(anchor.text)
            if parts is not None:
                key, value = parts
                latest[key] = (value, anchor.text)
                seen.setdefault(key, {})[anchor.text] = value
    return {
        old: latest[key][1]
        for key, olds in seen.items()
        for old, value in olds.items()
        if value != latest[key][0]
    }


def mark_replaced(text: str, replaced: dict[str, str]) -> str:
    """``text`` with every line naming a superseded literal marked: on a keyword line the old
    literals move to a ``replaced:`` group (each still a literal of the slice, listed once, and
    no longer among the current values of its own group), any other line gets
    ``(old → new)``."""
    if not replaced:
        return text
    lines = []
    for line in text.splitlines():
        olds = [  # the substring check first: most lines name none of hundreds of values
            old
            for old in replaced
            if old in line and re.search(re.escape(old) + r"(?![\w.])", line)
        ]
        if olds and line.startswith("Keywords"):
            line = _keywords_marked(line, olds)
        elif olds:
            line += "".join(f" ({old} → {replaced[old]})" for old in olds)
        lines.append(line)
    return "\n".join(lines)


def _keywords_marked(line: str, olds: Sequence[str]) -> str:
    """A keyword line as code writes it, with ``olds`` moved to its ``replaced:`` group; any
    other line starting with "Keywords" (a model's own spelling, which would not survive being
    written again) keeps every byte and gains the group."""
    anchors = parse_keyword_line(line)
    if keyword_line(anchors, max_chars=sys.maxsize) != line:
        items = (json.dumps(old) if any(c in old for c in ',;"') else old for old in olds)
        return f"{line}; {REPLACED_KIND}: {', '.join(items)}"
    marked = [a for a in anchors if a.kind == REPLACED_KIND]
    listed = {a.text for a in marked}
    marked += [Anchor(REPLACED_KIND, old) for old in olds if old not in listed]
    gone = {a.text for a in marked}
    current = [a for a in anchors if a.kind != REPLACED_KIND and a.text not in gone]
    return keyword_line([*current, *marked], max_chars=sys.maxsize)
