"""The degradation ladder's first rung (spec §4.4): a code-only rollup of the oldest stubs.

When the frozen stub region outgrows its share of the window, the oldest index checkpoints on
the surface are replaced by one rollup checkpoint, written by code (no model call): one line
saying what it covers, their keyword lines merged and trimmed, and every original footer kept,
so each rolled-up id stays a ``history_read``/``history_search`` target. The rollup is itself
an index checkpoint: frozen, and a candidate for a later rollup (its footers travel on).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dsh.compaction.anchors import Anchor, keyword_line, parse_keyword_line
from dsh.compaction.base import checkpoint_message
from dsh.compaction.prompts import footer, frame_rollup
from dsh.surface import Session, message_tokens

ROLLUP_KEYWORD_CHARS = 600
"""Length cap of a rollup's merged keyword line."""

FOOTER_LINE = re.compile(r"^\[checkpoint c\d+: shadows conversation span #\d+–#\d+;[^\n]*\]$", re.M)
FOOTER_TOKENS = 40
"""Price of one footer line, as the rollup planner estimates it."""


def rollup_body(texts: Sequence[str]) -> str:
    """The summary of a rollup of checkpoints whose surface ``texts`` are given, oldest first:
    a line naming how many entries it holds, the merged keyword line, every footer in order."""
    footers: list[str] = []
    per_stub: list[list[Anchor]] = []
    for text in texts:
        footers.extend(FOOTER_LINE.findall(text))
        anchors: list[Anchor] = []
        for line in text.splitlines():
            if line.startswith("Keywords"):
                anchors.extend(parse_keyword_line(line))
        per_stub.append(anchors)
    # Round robin over the entries, so each keeps its first (rarest) anchors when trimmed.
    merged: list[Anchor] = []
    depth = max((len(a) for a in per_stub), default=0)
    for rank in range(depth):
        merged.extend(anchors[rank] for anchors in per_stub if rank < len(anchors))
    lines = [f"Rolled-up index of {len(footers)} earlier checkpoints; open one by its footer id."]
    keywords = keyword_line(merged, max_chars=ROLLUP_KEYWORD_CHARS)
    if keywords:
        lines.append(keywords)
    lines.extend(footers)
    return "\n".join(lines)


def rollup_text(body: str, summary_seq: int, span: tuple[int, int]) -> str:
    return f"{frame_rollup(body)}\n{footer(summary_seq, span)}"


def rollup_cut(
    session: Session, leading: Sequence[int], *, incoming: int, target: int, limit: int
) -> int:
    """How many of the ``leading`` index checkpoints (the run at the surface head, oldest
    first) to roll up so the stub region — what stays of ``leading``, the rollup, and the
    ``incoming`` new stubs — drops to ``target``: the fewest that do; all of them when only
    that keeps the region within ``limit``. 0 when no rollup keeps it within ``limit`` (the
    next rung of the ladder takes over), so a rollup never lands only to be redone at once."""
    texts: list[str] = []
    region = sum(session.node_tokens(seq) for seq in leading) + incoming
    removed = 0
    after = region
    for count, seq in enumerate(leading, start=1):
        message = session.node_message(seq)
        texts.append(message.text() if message is not None else "")
        removed += session.node_tokens(seq)
        if count < 2:
            continue
        added = message_tokens_of(rollup_text(rollup_body(texts), 10**9, (10**9, 10**9)))
        after = region - removed + added
        if after <= target:
            return count
    return len(leading) if len(leading) >= 2 and after <= limit else 0


def message_tokens_of(text: str) -> int:
    return message_tokens(checkpoint_message(text))
