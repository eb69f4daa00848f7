"""The words of one checkpoint span, indexed: ``history_search``'s word fallback
(``dsh.recall.word_search``) asks it which messages hold a query word, and so costs what the
messages holding the query's words cost, not a scan of every compacted message.

An index holds the span's distinct words (``WORD`` runs of its lower-cased messages) in sorted
order and, for each, the messages holding it (their ``#msg`` numbers, ascending), in two flat
arrays. A query term's messages are the union over the words that begin with the term's probe
and stem to the term: exactly the messages in which the scan the fallback did before finds it,
since that scan looked at every word beginning with the probe (``str.find`` reaches each word's
first character) and took the term where one stemmed to it. Only the words beginning with the
probe are stemmed, found by bisecting the sorted words.

A span depends only on the log below its summary, so its index never changes: ``SpanCache``
builds it once per span (from the lower-cased span it already keeps) and keeps it beside it.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

WORD = re.compile(r"[^\W_]+")
"""A word: a run of letters and digits."""
ASCII_WORD = re.compile(r"[a-z0-9]+")
"""``WORD`` in a lower-cased ASCII text (its only letters are ``a``-``z``)."""

POSTING_CHARS = 4
"""What one posting (a message number in an ``array('I')``) is counted as against a span
cache's character budget: its bytes."""


@dataclass(frozen=True, slots=True)
class WordIndex:
    """One span's words and the messages holding each; ``lengths`` is each lower-cased
    message's length, so a hit's length is known without its text."""

    words: tuple[str, ...]
    """The distinct words, sorted."""
    starts: array[int]
    """Where each word's messages begin in ``postings`` (one more entry than ``words``)."""
    postings: array[int]
    """The message numbers of every word, word after word, each word's ascending."""
    lengths: tuple[int, ...]

    @classmethod
    def build(cls, lowered: Sequence[str]) -> WordIndex:
        """The index of a span's lower-cased messages."""
        holding: dict[str, list[int]] = {}
        for number, text in enumerate(lowered):
            pattern = ASCII_WORD if text.isascii() else WORD  # the same words, found sooner
            for word in set(pattern.findall(text)):
                numbers = holding.get(word)
                if numbers is None:
                    holding[word] = [number]
                else:
                    numbers.append(number)
        words = tuple(sorted(holding))
        starts, postings = array("I", [0]), array("I")
        for word in words:
            postings.extend(holding[word])
            starts.append(len(postings))
        return cls(words, starts, postings, tuple(len(text) for text in lowered))

    def matching(self, probe: str, stems_to: Callable[[str], bool]) -> list[array[int]]:
        """The messages of each word that begins with ``probe`` and ``stems_to`` the term (a
        message holding several such words is in each of their lists)."""
        return [
            self.postings[self.starts[at] : self.starts[at + 1]]
            for at in self._beginning(probe)
            if stems_to(self.words[at])
        ]

    def _beginning(self, probe: str) -> Iterable[int]:
        """The places in ``words`` of the words that begin with ``probe`` (they are adjacent)."""
        words = self.words
        at = bisect_left(words, probe)
        while at < len(words) and words[at].startswith(probe):
            yield at
            at += 1

    def size(self) -> int:
        """About the memory it takes, in characters (as a span cache counts): its words'
        characters and ``POSTING_CHARS`` per posting and per start."""
        return sum(map(len, self.words)) + POSTING_CHARS * (len(self.postings) + len(self.starts))
