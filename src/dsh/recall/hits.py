"""What ``history_search`` answers with: the hits of a literal scan, as many as the answer's
bound holds (``dsh.recall.snippets.Bound``), and the answer's text, which says truthfully how
many were shown of how many matched and where the others are."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dsh.events import Event
from dsh.recall.checkpoints import Checkpoint
from dsh.recall.render import SpanCache
from dsh.recall.snippets import Bound, snippet
from dsh.recall.tool_specs import READ_A_MATCH
from dsh.recall.word_search import WordHit, WordSearch, locate


@dataclass(frozen=True, slots=True)
class Found:
    hits: list[str]
    """The hits shown: those in original messages, then those in checkpoint texts."""
    matched: int
    checkpoints: int
    full: bool = False
    """Hits were left out because the answer's size bound was reached (not ``limit``)."""
    unshown: dict[str, int] = field(default_factory=dict)
    """Per checkpoint id, in log order: how many of its hits are not shown."""
    copies: int = 0
    """How many of ``matched`` are in checkpoint texts (``SpanCache.copies``)."""
    shown_copies: int = 0
    """How many of ``hits`` (the last ones) are in checkpoint texts."""

    @property
    def truncated(self) -> bool:
        return self.matched > len(self.hits)

    @property
    def unshown_count(self) -> int:
        return self.matched - len(self.hits)

    @property
    def counted(self) -> str:
        """``12 match(es)``, or with hits in checkpoint texts ``9 match(es) in the originals
        (+3 in checkpoint texts, listed after them)``."""
        if not self.copies:
            return f"{self.matched} match(es)"
        return (
            f"{self.matched - self.copies} match(es) in the originals (+{self.copies} in "
            "checkpoint texts, listed after them)"
        )


COPIES_HEADING = (
    "In checkpoint texts (a summary's or stub's words, copied into a later checkpoint's span; "
    "not the original messages):"
)
"""The line before the hits in checkpoint texts: those are a checkpoint's paraphrase or
keyword index of original messages, which the hits before it are."""

_Match = tuple[Checkpoint, int, int]
"""A checkpoint, the message of its span holding the query, and where in its lower-cased text."""


def scan(
    events: Sequence[Event],
    targets: Sequence[Checkpoint],
    query: str,
    bound: Bound,
    spans: SpanCache,
) -> Found:
    """One snippet per matching message of ``targets``, within ``bound``: the original
    messages' in log order, then those of checkpoint texts in log order (a checkpoint's text
    nested in a later one's span, a copy of what it shadows). ``bound`` is filled in that
    order and stops at the first hit that does not fit, so no original is left out while a
    copy is shown."""
    needle = query.lower()
    originals: list[_Match] = []
    copies: list[_Match] = []
    checkpoints = 0
    for target in targets:
        found = spans.matches(events, target, needle)
        checkpoints += bool(found)
        copied = spans.copies(events, target) if found else frozenset()
        for index, position in found:
            (copies if index in copied else originals).append((target, index, position))
    hits: list[str] = []
    unshown: dict[str, int] = {}
    used = shown_copies = 0
    full = False
    for group, heading in ((originals, 0), (copies, len(COPIES_HEADING) + 1)):
        for number, (target, index, position) in enumerate(group):
            if len(hits) < bound.limit and not full:
                message = spans.message(events, target, index)
                hit = f"[{target.id} #msg {index}] {snippet(message, position, len(needle))}"
                cost = len(hit) + 1 + (heading if number == 0 else 0)
                if bound.room is None or not hits or used + cost <= bound.room:
                    hits.append(hit)
                    used += cost
                    shown_copies += group is copies
                    continue
                full = True
            unshown[target.id] = unshown.get(target.id, 0) + 1
    in_log_order = {t.id: unshown[t.id] for t in targets if t.id in unshown}
    matched = len(originals) + len(copies)
    return Found(hits, matched, checkpoints, full, in_log_order, len(copies), shown_copies)


def hits_text(header: str, found: Found) -> str:
    shown = f"the first {len(found.hits)}"
    if found.copies:
        shown += " (originals first)"
    if found.full:
        header += (
            f" Showing {shown} of {found.matched}, as many as fit in one "
            f"answer; the other {found.matched - len(found.hits)} are in "
            f"{_where(found.unshown)}: pass one of those checkpoints or use a more specific "
            "query to see them."
        )
    elif found.truncated:
        header += (
            f" Showing {shown}; use a more specific query, pass a checkpoint, "
            "or raise limit to see more."
        )
    lines = list(found.hits)
    if found.shown_copies:
        lines.insert(len(lines) - found.shown_copies, COPIES_HEADING)
    return "\n\n".join([header, "\n".join(lines), READ_A_MATCH])


def _where(unshown: dict[str, int], most: int = 8) -> str:
    """``c12 (3), c40 (17)``: the checkpoints holding hits not shown, the first ``most``."""
    named = [f"{cid} ({count})" for cid, count in list(unshown.items())[:most]]
    more = len(unshown) - len(named)
    return ", ".join(named) + (f" and {more} more checkpoint(s)" if more > 0 else "")


def word_hits(
    events: Sequence[Event],
    header: str,
    terms: Sequence[str],
    words: WordSearch,
    bound: Bound,
    spans: SpanCache,
) -> tuple[str, int]:
    """The answer when no message holds the query literally but ``words.count`` hold enough
    of its words (``terms``), and how many hits it shows: the best ones up to ``bound``,
    originals before checkpoint texts (``WordSearch.best``), those under ``COPIES_HEADING``,
    the bound filled in that order and stopping at the first hit that does not fit."""
    best = words.best(bound.limit)
    hits = [
        (hit, spans.message(events, hit.checkpoint, hit.index), locate(events, hit, spans))
        for hit in best
    ]
    lines = [
        f"[{hit.checkpoint.id} #msg {hit.index}] {snippet(message, *place)}"
        for hit, message, place in hits
    ]
    first_copy = next((n for n, hit in enumerate(best) if hit.copy), None)
    heading = None if first_copy is None else (first_copy, len(COPIES_HEADING))
    shown = bound.fitting(lines, heading)
    text = word_hits_text(header, terms, words.count, words.copies, hits, lines[:shown])
    return text, shown


def word_hits_text(
    header: str,
    terms: Sequence[str],
    total: int,
    copies: int,
    hits: Sequence[tuple[WordHit, str, tuple[int, int]]],
    lines: Sequence[str],
) -> str:
    """The answer when no message holds the query literally but ``total`` hold enough of its
    words (``terms``), ``copies`` of them in checkpoint texts; ``hits``: the best ones up to
    the limit, each with its message and where its snippet is centred (``locate``); ``lines``:
    the first of them, as many as fit."""
    whole = sum(len(hit.held) == len(terms) for hit, _, _ in hits[: len(lines)])
    held = f"{total} message(s)"
    if copies:
        held = (
            f"{total - copies} message(s) in the originals (+{copies} in checkpoint texts, "
            "listed after them)"
        )
    header += (
        " The literal scan found nothing, so the query's words were looked for on their own "
        f"(any order, any word form, stop words dropped): {held} hold at least half "
        f"of its {len(terms)} word(s); best first."
    )
    ranked = f"{'originals first; ' if copies else ''}{whole} holding all"
    if len(lines) < len(hits):
        header += (
            f" Showing the best {len(lines)} ({ranked}), as many as fit in one "
            "answer; use fewer or rarer words to see others."
        )
    elif total > len(hits):
        header += f" Showing the first {len(hits)} ({ranked}); raise limit to see more."
    shown = list(lines)
    shown_copies = sum(hit.copy for hit, _, _ in hits[: len(lines)])
    if shown_copies:
        shown.insert(len(shown) - shown_copies, COPIES_HEADING)
    return "\n\n".join([header, "\n".join(shown), READ_A_MATCH])
