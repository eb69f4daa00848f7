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
* hits rank by how many of the words they hold, then by how rare those words are among the
  messages scanned (the sum of each word's BM25 inverse document frequency), then the shorter
  message, then log order.

Still a pure function of the log: no index, no model or embedding call. A message is never split
into all its words: each query word's beginning (its stem's first ``PROBE_CHARS`` characters) is
found with ``str.find`` and only the words starting there are stemmed, so the cost stays near
the literal scan's; a word whose stem does not begin like its own text (a few irregular English
forms, ``dying`` → ``die``) can be missed.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dsh.events import Event
from dsh.recall.checkpoints import Checkpoint
from dsh.recall.render import SpanCache

WORD = re.compile(r"[^\W_]+")
"""A word: a run of letters and digits."""

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
    at: int
    """Where, in the lower-cased message, the rarest term held first occurs."""
    width: int
    """The length of that occurrence."""


@dataclass(frozen=True, slots=True)
class WordSearch:
    hits: list[WordHit]
    """Every hit, best first."""
    messages: int
    """How many messages were scanned."""


def search_words(
    events: Sequence[Event], targets: Sequence[Checkpoint], terms: Sequence[str], spans: SpanCache
) -> WordSearch:
    """The messages of ``targets`` holding at least :func:`needed` of ``terms``, best first."""
    probes = [(term, _probe(term)) for term in terms]
    found: list[tuple[Checkpoint, int, int, dict[str, tuple[int, int]]]] = []
    holding = dict.fromkeys(terms, 0)
    """How many of the messages scanned hold each term, hits or not."""
    messages = 0
    for target in targets:
        lowered = spans.lowered(events, target)
        messages += len(lowered)
        for index, lower in enumerate(lowered):
            places = {}
            for term, probe in probes:
                place = _first_word(lower, term, probe)
                if place is not None:
                    places[term] = place
                    holding[term] += 1
            if len(places) >= needed(terms):
                found.append((target, index, len(lower), places))
    rarity = {term: _idf(messages, count) for term, count in holding.items() if count}
    hits = []
    for target, index, chars, places in found:
        held = tuple(term for term in terms if term in places)
        rarest = max(held, key=lambda term: rarity[term])
        at, width = places[rarest]
        score = sum(rarity[term] for term in held)
        hits.append(WordHit(target, index, held, score, chars, at, width))
    # stable: equal keys keep log order
    hits.sort(key=lambda hit: (-len(hit.held), -hit.score, hit.chars))
    return WordSearch(hits, messages)


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
