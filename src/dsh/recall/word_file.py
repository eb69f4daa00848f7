"""Word indexes kept on disk beside the span file, so a word search in a new process does not
tokenise every compacted message again.

Building a span's word index (``dsh.recall.word_index``) reads every word of the span: about a
second for the 27 MB of spans of a 100,000-event session, against a few milliseconds to read the
index back. A span's index depends only on its lower-cased text, which depends only on the log
below its summary, so it is kept for good, like the span: one file per session
(``<home>/cache/recall/<id>.words``, beside ``<id>.spans``), appended to as indexes are first
built (one write at the end of a search), read whole by the next process that looks for words.

The file holds a first line naming the format, the span file's (which fingerprints the
renderer), the word pattern and how the machine stores a posting (an ``array('I')`` item), then
frames (``dsh.store.frames``): a msgpack header ``[summarySeq, key, wordBytes, wordCount,
lengths]`` and a body of the words (UTF-8, ``surrogatepass``, one per line), then the ``starts``
and ``postings`` arrays as stored in memory. ``key`` is the span file's: a record serves only
that very summary at that seq. A record that does not check out ends the reading (the rest is
built again, and the next write replaces the file with its whole records and the new ones, as
``dsh.recall.span_file.append_records`` does for spans); any error reading or writing the file
only means the indexes are built as without it. ``dsh sessions repair`` deletes it with the span
file.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import zlib
from array import array
from pathlib import Path

import msgspec

from dsh.config.private_dirs import make_private_directory
from dsh.events import CompactionSummaryEvent
from dsh.recall.span_file import ENCODING, ERRORS, append_records, summary_key
from dsh.recall.span_file import MAGIC as SPAN_MAGIC
from dsh.recall.word_index import WORD, WordIndex
from dsh.store.frames import frame_bytes, read_frames

log = logging.getLogger("dsh.recall")

_ITEM = array("I").itemsize
MAGIC = b"dsh-words 1 %08x %s%d\n" % (
    zlib.crc32(SPAN_MAGIC + WORD.pattern.encode()),
    sys.byteorder.encode(),
    _ITEM,
)


class WordHeader(msgspec.Struct, array_like=True, frozen=True, gc=False):
    seq: int
    key: int
    word_bytes: int
    words: int
    lengths: tuple[int, ...]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(WordHeader)


class WordFile:
    """The stored word indexes of one session's file (read once, on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._indexes: dict[int, tuple[int, WordIndex]] | None = None
        self._pending: list[bytes] = []
        self._whole: bytes | None = None
        """The file's first line and whole records, when the read found more after them."""

    def get(self, summary: CompactionSummaryEvent) -> WordIndex | None:
        """The stored index of exactly ``summary``'s span, if the file has it."""
        if self._indexes is None:
            self._indexes = self._read()
        stored = self._indexes.get(summary.seq)
        return stored[1] if stored is not None and stored[0] == summary_key(summary) else None

    def put(self, summary: CompactionSummaryEvent, index: WordIndex) -> None:
        """Queue ``summary``'s index to be appended by the next :meth:`flush`."""
        words = "\n".join(index.words).encode(ENCODING, ERRORS)
        header = WordHeader(
            summary.seq, summary_key(summary), len(words), len(index.words), index.lengths
        )
        body = words + index.starts.tobytes() + index.postings.tobytes()
        self._pending += frame_bytes(_encoder.encode(header), body)

    def flush(self) -> None:
        """Append the queued indexes (one write); a failure is logged and otherwise ignored:
        the file is a cache."""
        if not self._pending:
            return
        records = b"".join(self._pending)
        self._pending = []
        try:
            make_private_directory(self.path.parent)
            append_records(self.path, MAGIC, records, self._whole)
            self._whole = None
        except OSError as exc:
            log.debug("cannot write the word index cache %s: %s", self.path, exc)

    def _read(self) -> dict[int, tuple[int, WordIndex]]:
        try:
            data = self.path.read_bytes()
        except OSError:
            return {}
        if data[: len(MAGIC)] != MAGIC:  # another format, renderer or machine: start again
            if data:
                with contextlib.suppress(OSError):
                    self.path.unlink()
            else:  # not even the first line: write it whole
                self._whole = MAGIC
            return {}
        indexes: dict[int, tuple[int, WordIndex]] = {}
        end = len(MAGIC)
        for frame in read_frames(data, len(MAGIC)):
            try:
                header = _decoder.decode(frame.header)
                index = _index(header, frame.body)
            except (msgspec.ValidationError, msgspec.DecodeError, ValueError):
                break
            indexes[header.seq] = (header.key, index)  # the latest record of a seq wins
            end = frame.stop
        if end != len(data):  # a torn or damaged record: the next write repairs the file
            self._whole = data[:end]
        return indexes


def _index(header: WordHeader, body: memoryview) -> WordIndex:
    """The index a record holds; ``ValueError`` if its parts do not add up."""
    text = bytes(body[: header.word_bytes]).decode(ENCODING, ERRORS)
    words = tuple(text.split("\n")) if header.words else ()
    starts, postings = array("I"), array("I")
    starts_end = header.word_bytes + _ITEM * (header.words + 1)
    starts.frombytes(body[header.word_bytes : starts_end])
    postings.frombytes(body[starts_end:])
    # the frame's CRC vouches for the values (as the span file's does for its lengths); the
    # sizes are checked so that a record of another layout cannot be misread
    if len(words) != header.words or len(starts) != header.words + 1 or starts[-1] != len(postings):
        raise ValueError("a word index record whose parts do not add up")
    return WordIndex(words, starts, postings, header.lengths)
