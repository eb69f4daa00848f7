"""Recall scoring (docs/bench.md, "Scoring rules"): search like a model would, three kinds of
query, and whether the compacted text itself names something to search for.

* ``recall``: ``history_search(query)``, then ``history_read`` of each hit in order; the rank of
  the first page holding the anchor gives hit@1, hit@5 and MRR (over the first 10 hits). Queries
  come in three kinds: ``exact`` (the anchor), ``partial`` (a literal fragment of it) and
  ``paraphrase`` (the words a person would use, sharing no 8-character substring with it).
* ``cues``: per compacted anchor, the first of its queries that the stub/state text of the final
  request contains (case-insensitive) and that finds the anchor within 5 hits — whether the
  compacted text alone names something a model could search for.
* ``shares_substring``: the paraphrase rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dsh.bench.results import RecallFigures
from dsh.config import RecallSettings
from dsh.events import Event
from dsh.recall import RecallError, SpanCache, read_checkpoint, search_history

RECALL_DEPTH = 10
"""Hits read per query when ranking (MRR is MRR@10)."""
CUE_RANK = 5
PARAPHRASE_GAP = 8
"""A paraphrase shares no substring of this many characters with its anchor."""
HIT = re.compile(r"\[(c\d+) #msg (\d+)\]")
KINDS = ("exact", "partial", "paraphrase")


def shares_substring(a: str, b: str, size: int = PARAPHRASE_GAP) -> str | None:
    """The first ``size``-character substring of ``a`` that ``b`` also holds (case-insensitive),
    or None."""
    low_a, low_b = a.lower(), b.lower()
    for start in range(len(low_a) - size + 1):
        if low_a[start : start + size] in low_b:
            return a[start : start + size]
    return None


@dataclass(frozen=True, slots=True)
class RecallScore:
    ranks: dict[str, int | None]
    """Per query (keyed by anchor, or ``anchor ← query`` for paraphrases): 1-based rank of the
    first hit whose page holds the anchor (None: not within 10)."""

    def hit_at(self, k: int) -> float:
        if not self.ranks:
            return 0.0
        return sum(r is not None and r <= k for r in self.ranks.values()) / len(self.ranks)

    @property
    def mrr(self) -> float:
        if not self.ranks:
            return 0.0
        return sum(1 / r for r in self.ranks.values() if r is not None) / len(self.ranks)

    def figures(self) -> RecallFigures:
        return RecallFigures(
            n=len(self.ranks),
            hit1=self.hit_at(1),
            hit5=self.hit_at(5),
            mrr=self.mrr,
            ranks=dict(self.ranks),
        )


def recall_rank(
    events: Sequence[Event],
    anchor: str,
    query: str,
    *,
    depth: int = RECALL_DEPTH,
    settings: RecallSettings | None = None,
    cache: SpanCache | None = None,
) -> int | None:
    """Search like the model would, then read each hit in order until a page holds ``anchor``."""
    settings = settings or RecallSettings()
    cache = cache if cache is not None else SpanCache()
    try:
        found = search_history(events, query, limit=max(depth, 1), cache=cache)
    except RecallError:
        return None
    for rank, (checkpoint, offset) in enumerate(HIT.findall(found.text)[:depth], start=1):
        try:
            page = read_checkpoint(
                events,
                checkpoint,
                int(offset),
                budget_chars=settings.read_budget_chars,
                cache=cache,
            )
        except RecallError:
            continue
        if anchor in page.text:
            return rank
    return None


def recall(
    events: Sequence[Event],
    targets: Iterable[tuple[str, str] | tuple[str, str, str]],
    *,
    depth: int = RECALL_DEPTH,
    cache: SpanCache | None = None,
) -> RecallScore:
    """``targets``: (anchor, query) pairs, keyed by anchor, or (key, anchor, query) triples;
    one span cache for all of them."""
    cache = cache if cache is not None else SpanCache()
    ranks: dict[str, int | None] = {}
    for target in targets:
        key, anchor, query = target if len(target) == 3 else (target[0], *target)
        ranks[key] = recall_rank(events, anchor, query, depth=depth, cache=cache)
    return RecallScore(ranks)


def paraphrase_key(anchor: str, query: str) -> str:
    return f"{anchor} ← {query}"


def cues(
    events: Sequence[Event],
    compacted_text: str,
    queries: dict[str, list[str]],
    *,
    cache: SpanCache | None = None,
) -> dict[str, str | None]:
    """Per anchor (``queries``: anchor → its exact, partial and paraphrase queries), the first
    query the compacted text names (case-insensitive) that finds the anchor within 5 hits."""
    cache = cache if cache is not None else SpanCache()
    low = compacted_text.lower()
    found: dict[str, str | None] = {}
    for anchor, terms in queries.items():
        found[anchor] = next(
            (
                term
                for term in terms
                if term.lower() in low
                and (recall_rank(events, anchor, term, cache=cache) or 99) <= CUE_RANK
            ),
            None,
        )
    return found
