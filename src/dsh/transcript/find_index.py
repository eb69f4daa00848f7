"""``FindIndex``: ``find_in_transcript`` over one session's log, kept between queries.

The transcript's items are made once (``TranscriptProjector``, which goes on from where it
stopped when the log grew) and their texts case-folded once, into one string per update with a
NUL between texts (a query without a NUL cannot match across two); a query is then a
``str.find`` over those strings, each match mapped back to its item (``bisect`` over the texts'
offsets), instead of projecting and folding the whole log again. A marker's texts (its pass's
summaries, which later events add to) are read at each query.

A log that is not the one indexed plus appends (cut back, replaced, loaded again: its last
indexed event is not the same object, or it is shorter) is indexed again from its start. The
answers equal ``find_in_transcript``'s (``tests/web/test_find_index_api.py``)."""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Sequence

from dsh.events import Event
from dsh.events.codec import gc_paused
from dsh.transcript.find import Hit, HitKind, _card_seq, _snippet, _texts
from dsh.transcript.projection import MarkerItem, MessageItem, TranscriptItem, TranscriptProjector
from dsh.transcript.render import injected_by

SEPARATOR = "\x00"
JOIN_AFTER = 32
"""Folded strings kept apart before they are joined into one (each update adds one)."""


class FindIndex:
    """One session's transcript, ready to search; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._projector = TranscriptProjector()
        self._fed = 0
        self._last: object = None
        self._items: list[TranscriptItem] = []
        self._markers: list[int] = []
        """Indexes (in ``_items``) of the markers: searched apart, as their texts grow."""
        self._chunks: list[str] = []
        self._chunk_starts: list[int] = []
        self._size = 0
        self._starts: list[int] = []
        """Per text folded: its offset in the folded strings put end to end."""
        self._texts: list[tuple[int, HitKind, str, str | None, int]] = []
        """Per text folded: (its item's index, kind, the text, callId, the offset after the
        item's last text)."""

    @property
    def indexed_events(self) -> int:
        """How many events of the log the index holds."""
        return self._fed

    @property
    def folded_chars(self) -> int:
        """The length of its folded text (what it keeps beside the log: about one character per
        character of the transcript's text)."""
        return self._size

    def update(self, events: Sequence[Event]) -> None:
        """Bring the index up to ``events``: appends folded in, anything else from the start."""
        count = len(events)
        if count < self._fed or (self._fed and events[self._fed - 1] is not self._last):
            self._reset()
        if count == self._fed:
            return
        feed = self._projector.feed
        parts: list[str] = []
        offset = self._size
        with gc_paused():  # many small acyclic objects: a collection pass would find nothing
            for index in range(self._fed, count):
                for item in feed(events[index]):
                    number = len(self._items)
                    self._items.append(item)
                    if isinstance(item, MarkerItem):
                        self._markers.append(number)
                        continue
                    texts = _texts(item, {})
                    folded = [text.lower() for _, text, _ in texts]
                    end = offset + sum(len(text) + 1 for text in folded)
                    for (kind, text, call_id), lowered in zip(texts, folded, strict=True):
                        self._starts.append(offset)
                        self._texts.append((number, kind, text, call_id, end))
                        parts.append(lowered)
                        offset += len(lowered) + 1
        self._fed = count
        self._last = events[count - 1]
        if parts:
            self._chunks.append(SEPARATOR.join(parts) + SEPARATOR)
            self._chunk_starts.append(self._size)
            self._size = offset
        if len(self._chunks) > JOIN_AFTER:
            self._chunks = ["".join(self._chunks)]
            self._chunk_starts = [0]

    def find(self, events: Sequence[Event], query: str, *, limit: int = 500) -> list[Hit]:
        """``find_in_transcript(events, query, limit=limit)``, from the kept index."""
        needle = query.strip().lower()
        if not needle:
            return []
        with self._lock:
            self.update(events)
            found = self._marker_hits(needle) + self._text_hits(needle, limit)
        found.sort(key=lambda pair: pair[0])
        return [hit for _, hit in found[:limit]]

    def _text_hits(self, needle: str, limit: int) -> list[tuple[int, Hit]]:
        hits: list[tuple[int, Hit]] = []
        if SEPARATOR in needle:  # it could match across two texts: each searched alone
            return self._each_text_hits(needle, limit)
        for chunk, base in zip(self._chunks, self._chunk_starts, strict=True):
            at = chunk.find(needle)
            while at >= 0:
                where = base + at
                text_index = bisect_right(self._starts, where) - 1
                number, kind, text, call_id, end = self._texts[text_index]
                hits.append(
                    (
                        number,
                        self._hit(
                            number,
                            kind,
                            text,
                            where - self._starts[text_index],
                            len(needle),
                            call_id,
                        ),
                    )
                )
                if len(hits) >= limit:
                    return hits
                at = chunk.find(needle, end - base)
        return hits

    def _each_text_hits(self, needle: str, limit: int) -> list[tuple[int, Hit]]:
        hits: list[tuple[int, Hit]] = []
        seen = -1
        for number, kind, text, call_id, _ in self._texts:
            at = text.lower().find(needle) if number != seen else -1
            if at >= 0:
                seen = number
                hits.append((number, self._hit(number, kind, text, at, len(needle), call_id)))
                if len(hits) >= limit:
                    break
        return hits

    def _marker_hits(self, needle: str) -> list[tuple[int, Hit]]:
        hits: list[tuple[int, Hit]] = []
        details = self._projector.details
        for number in self._markers:
            for kind, text, call_id in _texts(self._items[number], details):
                at = text.lower().find(needle)
                if at >= 0:
                    hits.append((number, self._hit(number, kind, text, at, len(needle), call_id)))
                    break
        return hits

    def _hit(
        self, number: int, kind: HitKind, text: str, at: int, length: int, call_id: str | None
    ) -> Hit:
        item = self._items[number]
        plugin = injected_by(item.message) if isinstance(item, MessageItem) else None
        return Hit(item.seq, kind, _snippet(text, at, length), call_id, _card_seq(item), plugin)
