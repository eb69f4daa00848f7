"""``history_search``'s second look: when no message holds the query literally, the messages
that hold its words, in any order and any word form, best first.

A model asks for a past detail in its own words ("retry limit", "nightly import crash") far more
often than with the exact text that was written ("max_retries = 3", "the import crashed"), and
an empty answer sends it back to guessing. The literal scan stays first and unchanged; only when
it finds nothing anywhere are the query's words looked for on their own:

* words are runs of letters and digits (``_``, ``-``, ``.`` and the like split them),
  lower-cased, English stop words and one-character words dropped, each reduced to its
  Snowball stem, so ``retry``, ``retries`` and ``retried`` are one word;
* a message is a hit when it holds at least half of the query's words (all of one, one of two,
  two of three …);
* hits in original messages come first, then hits in checkpoint texts (a state or stub nested in
  a later checkpoint's span: a paraphrase or keyword index of messages the search scans too),
  as the literal scan lists them (``dsh.recall.hits``); within each, hits rank by how many of
  the words they hold, then by how rare those words are among the messages scanned (the sum of
  each word's BM25 inverse document frequency), then the shorter message, then log order.

Still a pure function of the log: no model or embedding call. A message holds a query word when
one of its words begins with the word's beginning (its stem's first ``PROBE_CHARS`` characters)
and stems to it; a word whose stem does not begin like its own text (a few irregular English
forms, ``dying`` → ``die``) can be missed. Which messages those are is looked up in each span's
word index (``dsh.recall.word_index``, built once per span and kept with it), so a search costs
what the messages holding its words cost, not a scan of every compacted message; only the hits
shown are read again, for their snippets (:func:`locate`).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dsh.events import Event
from dsh.recall.checkpoints import Checkpoint
from dsh.recall.render import SpanCache
from dsh.recall.word_index import WORD

PROBE_CHARS = 4
"""Only words beginning with the first this many characters of a query word's stem (the whole
stem when shorter, less a final ``i``, Snowball's spelling of ``y``) are stemmed."""

_STOP_WORDS_TEXT = """a an and are as at be been but by can could did do does for from had has
have how i if in into is it its me my no not of on or our so than that the their them then there
these they this those to too us was we were what when where which who whom why will with would
you your"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
"""Words that say nothing about what is wanted, dropped from a query."""


@functools.cache
def _stemmer() -> Any:
    """Snowball's English stemmer, imported on first use: the package imports every language
    (~0.3 s), which only a search that finds nothing literally should pay."""
    import snowballstemmer  # type: ignore[import-untyped]  # ships no type information

    return snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball (Porter 2) English stem of lower-case ``word``."""
    return str(_stemmer().stemWord(word))


def query_terms(query: str) -> tuple[str, ...]:
    """The stems of ``query``'s words that carry meaning, each once, in query order."""
    terms: dict[str, None] = {}
    for word in WORD.findall(query.lower()):
        if len(word) > 1 and word not in STOP_WORDS:
            terms.setdefault(stem(word), None)
    return tuple(terms)


def needed(terms: Sequence[str]) -> int:
    """How many of ``terms`` a message must hold to be a hit: at least half, at least one."""
    return max(1, math.ceil(len(terms) / 2))


@dataclass(frozen=True, slots=True)
class WordHit:
    checkpoint: Checkpoint
    index: int
    """The message's place in its checkpoint's span (the ``#msg`` number)."""
    held: tuple[str, ...]
    """The query terms the message holds, in query order."""
    score: float
    chars: int
    """The message's length."""
    rarest: str
    """The rarest term held (the first such in query order): what its snippet shows."""
    copy: bool = False
    """The message is a checkpoint's text (``SpanCache.copies``), listed after the originals."""


@dataclass(frozen=True, slots=True)
class _Group:
    """The hits that hold the same terms (one ``mask`` of the distinct terms), all in original
    messages or all in checkpoint texts (``copy``)."""

    copy: bool
    held: tuple[str, ...]
    score: float
    rarest: str
    places: list[int]
    """Each hit's place in log order: ``target << PLACE_BITS | #msg`` (ints: no object per hit
    for the collector to walk)."""


PLACE_BITS = 32
"""Bits of a hit's place that hold its ``#msg`` (the rest: its target's position)."""


class WordSearch:
    """Every hit of a search by words, ranked; :meth:`best` makes the ``WordHit``s of the
    first few (a search of common words can hit most messages, and shows at most 200)."""

    def __init__(
        self,
        targets: Sequence[Checkpoint],
        lengths: Sequence[Sequence[int]],
        groups: Sequence[_Group],
        messages: int,
        rarity: dict[str, float] | None = None,
    ) -> None:
        self._targets = targets
        self._lengths = lengths
        self._groups = groups
        self.messages = messages
        """How many messages were scanned."""
        self.count = sum(len(group.places) for group in groups)
        """How many messages are hits."""
        self.rarity = rarity or {}
        """Each term some scanned message holds: its inverse document frequency (``_idf``)."""
        self.copies = sum(len(group.places) for group in groups if group.copy)
        """How many of them are checkpoint texts (ranked after every original)."""

    @property
    def hits(self) -> list[WordHit]:
        """Every hit, best first."""
        return self.best(self.count)

    def best(self, limit: int) -> list[WordHit]:
        """The first ``limit`` hits, best first: originals before checkpoint texts, then most
        terms held, then the rarest, then the shortest message, then log order."""
        chosen: list[WordHit] = []
        groups = sorted(self._groups, key=_rank)
        for _, tied in itertools.groupby(groups, key=_rank):
            if len(chosen) >= limit:
                break
            owner: dict[int, _Group] = {}
            ranked = []  # a message's length, then its place in log order, as one int
            for group in tied:
                for place in group.places:
                    owner[place] = group
                    ranked.append(self._chars(place) << _RANK_SHIFT | place)
            for item in heapq.nsmallest(limit - len(chosen), ranked):
                place = item & _PLACE
                group = owner[place]
                target = self._targets[place >> PLACE_BITS]
                hit = WordHit(
                    target,
                    place & _NUMBER,
                    group.held,
                    group.score,
                    self._chars(place),
                    group.rarest,
                    group.copy,
                )
                chosen.append(hit)
        return chosen

    def _chars(self, place: int) -> int:
        return self._lengths[place >> PLACE_BITS][place & _NUMBER]


def _rank(group: _Group) -> tuple[bool, int, float]:
    """A group's place in the ranking: originals first, then most terms held, then the rarest."""
    return group.copy, -len(group.held), -group.score


_NUMBER = (1 << PLACE_BITS) - 1
_RANK_SHIFT = 2 * PLACE_BITS
_PLACE = (1 << _RANK_SHIFT) - 1


def search_words(
    events: Sequence[Event], targets: Sequence[Checkpoint], terms: Sequence[str], spans: SpanCache
) -> WordSearch:
    """The messages of ``targets`` holding at least :func:`needed` of ``terms``, ranked.

    Each span's words are looked up in its index (``spans.words``, ``dsh.recall.word_index``),
    so the cost is that of the messages holding the terms, not of every message. Which hits are
    checkpoint texts is asked of ``spans`` (``SpanCache.copies``) only for a span holding a term."""
    distinct = tuple(dict.fromkeys(terms))
    least = needed(terms)
    holding = dict.fromkeys(distinct, 0)
    """How many of the messages scanned hold each term, hits or not."""
    by_mask: dict[int, list[int]] = {}
    by_copy_mask: dict[int, list[int]] = {}
    """Hits in original messages and in checkpoint texts, by the terms they hold."""
    lengths = []
    messages = 0
    for position, target in enumerate(targets):
        index = spans.words(events, target)
        lengths.append(index.lengths)
        messages += len(index.lengths)
        masks: dict[int, int] = {}
        """Which of the distinct terms each message holds, one bit per term."""
        for bit, term in enumerate(distinct):
            flag, count = 1 << bit, 0
            for postings in index.matching(_probe(term), functools.partial(_stems_to, term)):
                for number in postings:
                    mask = masks.get(number, 0)
                    if not mask & flag:
                        masks[number] = mask | flag
                        count += 1
            holding[term] += count
        # the few checkpoint texts taken out first, so each hit costs what it did before
        copied = spans.copies(events, target) if masks else ()
        in_copies = {number: masks.pop(number) for number in copied if number in masks}
        for kind, found in ((by_mask, masks), (by_copy_mask, in_copies)):
            for number, mask in found.items():
                if mask.bit_count() >= least:
                    kind.setdefault(mask, []).append(position << PLACE_BITS | number)
    rarity = {term: _idf(messages, count) for term, count in holding.items() if count}
    bits = {term: 1 << bit for bit, term in enumerate(distinct)}
    groups = []
    for copy, kind in ((False, by_mask), (True, by_copy_mask)):
        for mask, places in kind.items():
            held = tuple(term for term in terms if mask & bits[term])
            rarest = max(held, key=lambda term: rarity[term])
            score = sum(rarity[term] for term in held)
            groups.append(_Group(copy, held, score, rarest, places))
    return WordSearch(targets, lengths, groups, messages, rarity)


def locate(events: Sequence[Event], hit: WordHit, spans: SpanCache) -> tuple[int, int]:
    """(start, length) in the lower-cased message of ``hit`` of the first word that stems to
    its rarest term: where its snippet is centred."""
    lower = spans.lowered_message(events, hit.checkpoint, hit.index)
    place = _first_word(lower, hit.rarest, _probe(hit.rarest))
    # the index found the word in these very words, so it is there; were it not, the snippet
    # would show the message's start rather than fail the search
    return place if place is not None else (0, 0)


def _stems_to(term: str, word: str) -> bool:
    return stem(word) == term


def _probe(term: str) -> str:
    """How a word stemming to ``term`` begins (``retri`` → ``retr``: Snowball writes a final
    ``y`` as ``i``), at most ``PROBE_CHARS`` characters."""
    probe = term[:-1] if len(term) > 1 and term.endswith("i") else term
    return probe[:PROBE_CHARS]


def _first_word(lower: str, term: str, probe: str) -> tuple[int, int] | None:
    """(start, length) of the first word of ``lower`` that begins with ``probe`` and stems to
    ``term``; found with ``str.find`` so that a message is never split into all its words."""
    at = lower.find(probe)
    while at >= 0:
        if at == 0 or not lower[at - 1].isalnum():
            word = WORD.match(lower, at)
            if word is not None and stem(word.group()) == term:
                return at, word.end() - at
        at = lower.find(probe, at + 1)
    return None


def _idf(messages: int, holding: int) -> float:
    """BM25's inverse document frequency of a word ``holding`` of ``messages`` messages hold."""
    return math.log(1 + (messages - holding + 0.5) / (holding + 0.5))
