"""The degradation ladder's rollup: a code-only rollup of the oldest stubs.

See docs/compaction.md, "The degradation ladder". When the frozen stub region outgrows its
share of the window, the oldest index checkpoints on the surface are replaced by one rollup
checkpoint, written by code (no model call): one line saying what it covers, their keyword lines
merged and trimmed, and the footer of every checkpoint it takes, so each rolled-up id stays a
``history_read``/``history_search`` target. The rollup is itself an index checkpoint: frozen,
and a candidate for a later rollup. A later rollup that takes it keeps *its* footer, not the
footers listed inside it: those are one ``history_read`` away (reading a rollup renders its
entries, footers included — the two-hop chain of docs/compaction.md, "The two recall tools"),
and ``history_search`` tags a hit with the stub that shadows it directly. Carrying every nested
footer on would grow the head rollup by a footer per stub for the whole session until no rollup
could make room and every later pass wrote no stub at all (measured: from the 14th pass on in a
16k window).

A frozen stub cannot be corrected, so one that names a setting whose value later changed would
present the old value as current for good (issue 22). The pass that compacts the change finds
such stubs (``superseded_in_stubs``) and rolls them up too: the rollup marks each old literal
as replaced, and the mark travels on through later rollups — until the value is set back
(8080 → 9090 → 8080): the pass that compacts the revert rolls up the checkpoint carrying the
mark and drops it, so no rollup lists the current value as replaced.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dsh.compaction.anchors import (
    Anchor,
    extract_anchors,
    keyword_line,
    parse_keyword_line,
    split_config,
)
from dsh.compaction.base import RegionPlan, checkpoint_message
from dsh.compaction.prompts import footer, frame_rollup
from dsh.compaction.recallable.texts import REPLACED_KIND, mark_replaced
from dsh.events import Message
from dsh.surface import Session, message_tokens
from dsh.transcript import render_message

ROLLUP_KEYWORD_CHARS = 600
"""Length cap of a rollup's merged keyword line in a window whose stub share is large enough."""
MIN_ROLLUP_KEYWORD_CHARS = 100
"""The least a scaled cap goes down to (``rollup_keyword_chars``)."""

FOOTER_LINE = re.compile(r"^\[checkpoint c\d+: shadows conversation span #\d+–#\d+;[^\n]*\]$", re.M)
ROLLUP_TAG = "<compacted-rollup>"


def rollup_keyword_chars(budget: int | None) -> int:
    """The cap of a new rollup's keyword line for a stub region of ``budget`` tokens (``None``:
    no window known): a quarter of the region in characters (at ~4 characters a token, its
    token count), between ``MIN_ROLLUP_KEYWORD_CHARS`` and ``ROLLUP_KEYWORD_CHARS``. A fixed
    600 made a rollup ~245 tokens, too big for a small window's share: at 4,096 tokens one
    rollup and one new stub filled the region and every later pass rolled up again. Frozen
    rollups keep the line they were made with; only new ones use the cap of their pass."""
    if budget is None:
        return ROLLUP_KEYWORD_CHARS
    return max(MIN_ROLLUP_KEYWORD_CHARS, min(ROLLUP_KEYWORD_CHARS, budget))


def rollup_body(
    texts: Sequence[str],
    replaced: dict[str, str] | None = None,
    *,
    max_chars: int = ROLLUP_KEYWORD_CHARS,
) -> str:
    """The summary of a rollup of checkpoints whose surface ``texts`` are given, oldest first:
    a line naming how many entries it holds, the merged keyword line, each entry's own footer
    (its last footer line: a rolled-up rollup's inner footers stay inside it) in order.
    The keyword line marks as replaced each old literal of ``replaced`` and each one a rolled-up
    checkpoint already marked — except a value of ``replaced`` (a value set back is current
    again: the frozen rollup never contradicts what is current when it is made). The keyword
    line is trimmed to ``max_chars`` (``rollup_keyword_chars``); footers are never dropped."""
    footers: list[str] = []
    per_stub: list[list[Anchor]] = []
    current = set((replaced or {}).values())  # a value set back is current again: never marked
    marks = {old: new for old, new in (replaced or {}).items() if old not in current}
    for text in texts:
        footers.extend(FOOTER_LINE.findall(text)[-1:])
        anchors: list[Anchor] = []
        for line in text.splitlines():
            if line.startswith("Keywords"):
                for anchor in parse_keyword_line(line):
                    if anchor.kind == REPLACED_KIND and anchor.text in current:
                        anchor = Anchor("config", anchor.text)  # the mark is dropped
                    elif anchor.kind == REPLACED_KIND:  # the mark travels on, with its literal
                        marks.setdefault(anchor.text, anchor.text)
                    anchors.append(anchor)
        per_stub.append(anchors)
    # Round robin over the entries, so each keeps its first (rarest) anchors when trimmed.
    merged: list[Anchor] = []
    depth = max((len(a) for a in per_stub), default=0)
    for rank in range(depth):
        merged.extend(anchors[rank] for anchors in per_stub if rank < len(anchors))
    entries = f"{len(footers)} earlier checkpoint" + ("" if len(footers) == 1 else "s")
    lines = [f"Rolled-up index of {entries}; open one by its footer id."]
    keywords = keyword_line(merged, max_chars=max_chars)
    if keywords:
        lines.append(mark_replaced(keywords, marks))
    lines.extend(footers)
    return "\n".join(lines)


def superseded_in_stubs(
    texts: Sequence[str], span: Sequence[Message], tail: Sequence[Message]
) -> tuple[int, dict[str, str]]:
    """For frozen stubs whose surface ``texts`` are given (the leading run, oldest first), the
    messages of the ``span`` a pass compacts and the retained ``tail`` after it: how many of the
    oldest stubs a rollup must take so that no stub left names, unmarked, a setting whose value
    changed later on while the new value leaves the surface with this pass, nor marks as
    replaced a value set back since — and ``old literal -> newest literal`` for that rollup to
    mark (``literal -> literal`` for a marked value that is current again: the rollup drops
    its mark). A new value still verbatim in the tail waits
    for the pass that compacts it (until then the model reads it there). ``(0, {})`` when no
    frozen stub names a superseded value."""
    named: list[tuple[int, str, str, str, bool]] = []  # (position, literal, key, value, marked)
    for position, text in enumerate(texts):
        for literal in _config_literals(text):
            parts = split_config(literal)
            if parts is not None:
                named.append((position, literal, *parts, _marked(text, literal)))
    if not named:
        return 0, {}
    keys = {key for _, _, key, _, _ in named}
    latest: dict[str, tuple[str, str]] = {}
    tail_texts = [render_message(message) for message in tail]
    for text in [*(render_message(message) for message in span), *tail_texts]:
        if not any(key in text for key in keys):
            continue
        for anchor in extract_anchors(text, kinds=("config",)):
            parts = split_config(anchor.text)
            if parts is not None and parts[0] in keys:
                latest[parts[0]] = (parts[1], anchor.text)
    count, replaced = 0, {}
    for position, literal, key, value, marked in named:
        # an unmarked old value, or a marked one set back since (current again)
        if key not in latest or (latest[key][0] == value) != marked:
            continue
        if not any(latest[key][1] in text for text in tail_texts):
            # ``literal -> literal`` unmarks a value that is current again
            replaced[literal] = literal if marked else latest[key][1]
            count = max(count, position + 1)
    return count, replaced


def _config_literals(text: str) -> list[str]:
    """The settings a stub names: its keyword lines' config items and the config anchors of
    its other lines (footers aside)."""
    literals: list[str] = []
    for line in text.splitlines():
        if line.startswith("Keywords"):
            literals.extend(
                a.text for a in parse_keyword_line(line) if a.kind in ("config", REPLACED_KIND)
            )
        elif not FOOTER_LINE.match(line):
            literals.extend(a.text for a in extract_anchors(line, kinds=("config",)))
    return list(dict.fromkeys(literals))


def _marked(text: str, literal: str) -> bool:
    """Every line of ``text`` naming ``literal`` already marks it as replaced: a keyword line
    in its ``replaced`` group, any other line as ``(literal → …)``."""
    lines = [line for line in text.splitlines() if literal in line]
    for line in lines:
        if line.startswith("Keywords"):
            group = {a.text for a in parse_keyword_line(line) if a.kind == REPLACED_KIND}
            if literal not in group:
                return False
        elif f"({literal} →" not in line:
            return False
    return bool(lines)


def rollup_text(body: str, summary_seq: int, span: tuple[int, int]) -> str:
    return f"{frame_rollup(body)}\n{footer(summary_seq, span)}"


def rollup_gains(
    session: Session, leading: Sequence[int], *, max_chars: int = ROLLUP_KEYWORD_CHARS
) -> list[int]:
    """Entry ``k - 1``: the tokens the stub region loses when the first ``k`` of the
    ``leading`` checkpoints become one rollup (0 when none). A rollup takes two or more, or one
    earlier rollup alone (down to its own footer); a lone stub is never rolled up for room — it
    would trade its lines for a rollup's header and save a few tokens at the price of a head
    rewrite. Computed once per plan, whatever the number of new stubs it then tries; each
    rollup priced as ``rollup_body`` makes it with the keyword cap ``max_chars``."""
    texts: list[str] = []
    removed = 0
    gains: list[int] = []
    for seq in leading:
        texts.append(node_text(session, seq))
        removed += session.node_tokens(seq)
        if len(texts) == 1 and ROLLUP_TAG not in texts[0]:
            gains.append(0)
            continue
        added = rollup_tokens(rollup_body(texts, max_chars=max_chars))
        gains.append(max(0, removed - added))
    return gains


def reroll_tokens(
    session: Session, leading: Sequence[int], *, max_chars: int = ROLLUP_KEYWORD_CHARS
) -> int:
    """Tokens of the rollup a later pass would make of the rollup of every ``leading``
    checkpoint, rolled up alone (down to its own footer), both with the keyword cap
    ``max_chars``."""
    body = rollup_body([node_text(session, seq) for seq in leading], max_chars=max_chars)
    once = rollup_text(body, 10**9, (10**9, 10**9))
    return rollup_tokens(rollup_body([once], max_chars=max_chars))


def rollup_region(
    seqs: Sequence[int], texts: Sequence[str], replaced: dict[str, str], max_chars: int
) -> RegionPlan:
    """The plan's region rolling up the checkpoints at ``seqs`` (surface ``texts``): written
    by code, priced by ``rollup_tokens`` as ``rollup_gains`` priced it with the same cap."""
    body = rollup_body(texts, replaced, max_chars=max_chars)
    price = rollup_tokens(body)
    return RegionPlan(
        kind="index",
        shadowed_seqs=tuple(seqs),
        task=None,
        code_text=body,
        estimate_tokens=price,
        min_tokens=price,
    )


def rollup_tokens(body: str) -> int:
    """The size a rollup of ``body`` is priced at (its footer with the widest ids)."""
    return message_tokens_of(rollup_text(body, 10**9, (10**9, 10**9)))


def rollup_count(region: int, gains: Sequence[int], *, target: int) -> int:
    """How many of the leading index checkpoints (the run at the surface head, oldest first;
    ``gains``: their ``rollup_gains``) to roll up so a stub region of ``region`` tokens (the
    leading run and the new stubs) drops to ``target``: the fewest that do, 0 when none does."""
    for count, gain in enumerate(gains, start=1):
        if gain > 0 and region - gain <= target:
            return count
    return 0


def node_text(session: Session, seq: int) -> str:
    """The surface text of the checkpoint at ``seq`` (footer included)."""
    message = session.node_message(seq)
    return message.text() if message is not None else ""


def message_tokens_of(text: str) -> int:
    return message_tokens(checkpoint_message(text))
