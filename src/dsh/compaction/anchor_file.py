"""A session's anchor index kept on disk, so a resumed session's first pass does not scan the
whole log to rank literals (docs/compaction.md, "Rarity of a literal").

The file (``<home>/cache/anchors/<id>.anchors``, see ``dsh.store.anchor_cache_path``) is derived
data, never the source of truth. Its first line names the format, a fingerprint of the code the
counts depend on (``code_fingerprint``) and a fingerprint of the session it belongs to (its id
and header). Then come records, each a frame (header length, body length, CRC32 of both), a
msgpack header ``[start, end, last, texts, entries]`` and a msgpack body: the anchor texts and
how many of the messages of events ``start``..``end - 1`` name each (texts holding a lone
surrogate, which JSON allows and msgpack strings do not, go apart as UTF-8 ``surrogatepass``
bytes). ``last`` is a hash of the encoding of event ``end - 1``. The first record starts at 0
and each next one at the end of the one before, so the records, summed, are the index of the
log's first ``end`` events.

Reading takes the longest run of whole, CRC-checked, chained records and uses it up to its last
record whose ``last`` matches the log's event at that seq (a log cut back or grown again
differently fails that check) and that covers no more events than asked for. Anything else —
no file, another format, code or session, a torn or damaged record — means no stored index (or
a shorter one): the index is built from the log as without the file, with nothing said to the
user. A pass appends one record with what it added (O(its span)); the file is written whole
(to a temporary file, fsynced, renamed over it, so a crash leaves the old file or the new) when
there is none yet to append to, when it is not as this process left it, or when its records
hold more than twice the entries of the index. Appending is not fsynced: a torn record is
ignored on reading, and the index it would have added is counted again from the log. Any error
writing only means the file is not used again by this process.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import logging
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import msgspec

import dsh.compaction.anchor_patterns
import dsh.compaction.anchors
import dsh.events.predicates
import dsh.transcript.render
from dsh import __version__
from dsh.compaction.anchors import AnchorIndex
from dsh.config.file_update import replace_file
from dsh.config.private_dirs import make_private_directory
from dsh.errors import EventValidationError
from dsh.events import (
    Event,
    Message,
    ModelSource,
    TextBlock,
    ToolCallBlock,
    UserSource,
    encode_event,
)
from dsh.store.base import encode_header
from dsh.store.fd_write import write_all
from dsh.store.frames import frame_bytes, read_frames
from dsh.surface import Session
from dsh.transcript import render_message

log = logging.getLogger("dsh.compaction")

FORMAT = 1
_ENCODING, _ERRORS = "utf-8", "surrogatepass"
COMPACT_SLACK = 4096
"""Records holding more than twice the index's entries plus this many are written whole again."""


class RecordHeader(msgspec.Struct, array_like=True, frozen=True, gc=False):
    start: int
    end: int
    last: bytes
    """Hash of event ``end - 1``'s encoding (empty when ``end`` is 0)."""
    texts: int
    """How many messages the record counts."""
    entries: int


class RecordBody(msgspec.Struct, array_like=True, frozen=True, gc=False):
    keys: list[str]
    counts: list[int]
    odd_keys: list[bytes]
    """Anchor texts with a lone surrogate, as UTF-8 with ``surrogatepass``."""
    odd_counts: list[int]


_encoder = msgspec.msgpack.Encoder()
_header_decoder = msgspec.msgpack.Decoder(RecordHeader)
_body_decoder = msgspec.msgpack.Decoder(RecordBody)


def event_key(event: Event) -> bytes:
    """What a record's ``last`` holds for ``event``: a hash of its encoding (of its repr, for
    an event that has no JSON encoding, so this never fails)."""
    try:
        data = encode_event(event)
    except EventValidationError:
        data = repr(event).encode(_ENCODING, _ERRORS)
    return hashlib.blake2b(data, digest_size=12).digest()


@functools.cache
def code_fingerprint() -> str:
    """A hash of what the counts depend on: the format, dsh's version, the source of the modules
    that extract anchors, render messages and tell which events are messages, and what they
    make of a few probe messages. A change to any of them makes every stored index another's."""
    digest = hashlib.blake2b(b"%d %s" % (FORMAT, __version__.encode()), digest_size=8)
    modules: tuple[ModuleType, ...] = (
        dsh.compaction.anchors,
        dsh.compaction.anchor_patterns,
        dsh.transcript.render,
        dsh.events.predicates,
    )
    for module in modules:
        with contextlib.suppress(OSError, TypeError):  # no source shipped: the probes still count
            digest.update(inspect.getsource(module).encode(_ENCODING, _ERRORS))
    probes = (
        Message(
            id="p1",
            role="user",
            content=(TextBlock(text='fix ZEBRA-7731 in src/app.py: retries = 5, "a b"'),),
            source=UserSource(),
        ),
        Message(
            id="p2",
            role="assistant",
            content=(TextBlock(text="ValueError: bad port 8080"), ToolCallBlock("c", "n", "{}")),
            source=ModelSource(provider="p", model="m"),
        ),
    )
    for probe in probes:
        probe_index = AnchorIndex()
        rendered = render_message(probe)
        digest.update(rendered.encode(_ENCODING, _ERRORS))
        digest.update("\0".join(sorted(probe_index.add(rendered))).encode(_ENCODING, _ERRORS))
    return digest.hexdigest()


def owner_key(session: Session) -> str:
    """A hash of the session's id and header: a file of another session never matches."""
    data = session.id.encode(_ENCODING, _ERRORS) + b"\0" + encode_header(session.header)
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def first_line(session: Session) -> bytes:
    return b"dsh-anchors %d %s %s\n" % (
        FORMAT,
        code_fingerprint().encode(),
        owner_key(session).encode(),
    )


def encode_record(
    start: int, end: int, last: bytes, texts: int, counts: Mapping[str, int]
) -> bytes:
    """One framed record of ``counts`` (anchor text -> messages naming it)."""
    keys, values = list(counts), list(counts.values())
    odd_keys: list[bytes] = []
    odd_counts: list[int] = []
    try:
        body = _encoder.encode(RecordBody(keys, values, odd_keys, odd_counts))
    except UnicodeEncodeError:  # a lone surrogate somewhere: those go as bytes
        plain: list[str] = []
        plain_counts: list[int] = []
        for key, value in counts.items():
            try:
                key.encode(_ENCODING)
            except UnicodeEncodeError:
                odd_keys.append(key.encode(_ENCODING, _ERRORS))
                odd_counts.append(value)
            else:
                plain.append(key)
                plain_counts.append(value)
        body = _encoder.encode(RecordBody(plain, plain_counts, odd_keys, odd_counts))
    header = _encoder.encode(RecordHeader(start, end, last, texts, len(counts)))
    return b"".join(frame_bytes(header, body))


@dataclass(frozen=True, slots=True)
class _Record:
    header: RecordHeader
    body: memoryview
    stop: int
    """Where the record's frame ends in the file."""


def read_records(data: bytes, magic: bytes) -> list[_Record]:
    """The longest run of whole, CRC-checked records chained from event 0 (none when the first
    line is not ``magic``)."""
    if not data.startswith(magic):
        return []
    records: list[_Record] = []
    covered = 0
    for frame in read_frames(data, len(magic)):
        try:
            header = _header_decoder.decode(frame.header)
        except msgspec.DecodeError:
            break
        if header.start != covered or header.end < header.start:
            break  # not the next record of this chain
        records.append(_Record(header, frame.body, frame.stop))
        covered = header.end
    return records


def _body_counts(record: _Record) -> dict[str, int]:
    body = _body_decoder.decode(record.body)
    if len(body.keys) != len(body.counts) or len(body.odd_keys) != len(body.odd_counts):
        raise ValueError("keys and counts differ in length")
    counts = dict(zip(body.keys, body.counts, strict=True))
    for key, value in zip(body.odd_keys, body.odd_counts, strict=True):
        counts[key.decode(_ENCODING, _ERRORS)] = value
    if len(counts) != record.header.entries:
        raise ValueError("a record's entry count does not match its body")
    return counts


@dataclass(slots=True)
class Added:
    """What the messages of the events from ``start`` on added to an index."""

    start: int
    texts: int = 0
    counts: Counter[str] = field(default_factory=Counter)


class AnchorFile:
    """One session's anchor index file, as this process last read or wrote it."""

    def __init__(self, path: Path, session: Session) -> None:
        self.path = path
        self._magic = first_line(session)
        self.end: int | None = None
        """How many events the file's records cover, when this process may append to it."""
        self._size = 0
        self._entries = 0
        self._broken = False

    def load(self, session: Session, upto: int) -> tuple[AnchorIndex, int] | None:
        """The stored index of the session's first ``n`` events and ``n`` (at most ``upto``),
        or None when the file holds none this log can use."""
        self.end = None
        try:
            data = self.path.read_bytes()
        except OSError:
            return None
        records = read_records(data, self._magic)
        events = session.events
        used = len(records)
        while used and not _matches(records[used - 1].header, events, upto):
            used -= 1
        if not used:
            return None
        counts: Counter[str] = Counter()
        texts = 0
        try:
            for record in records[:used]:
                counts.update(_body_counts(record))  # the first one into an empty Counter: fast
                texts += record.header.texts
        except ValueError as exc:  # msgspec.DecodeError and UnicodeDecodeError are ValueErrors
            log.debug("ignoring the anchor index %s: %s", self.path, exc)
            return None
        last = records[used - 1]
        self._entries = sum(r.header.entries for r in records[:used])
        if last.stop == len(data):  # the whole file: the next pass appends to it
            self.end, self._size = last.header.end, last.stop
        return AnchorIndex(counts, texts), last.header.end

    def save(self, session: Session, index: AnchorIndex, end: int, added: Added | None) -> None:
        """Store ``index``, the index of the session's first ``end`` events: by appending
        ``added`` when it starts where the file ends, else by writing the file whole."""
        if self._broken or end == 0 or end == self.end:
            return
        last = event_key(session.events[end - 1])
        try:
            if (
                added is not None
                and added.start == self.end
                and self._entries + len(added.counts) <= 2 * len(index.counts) + COMPACT_SLACK
                and self._append(encode_record(added.start, end, last, added.texts, added.counts))
            ):
                self._entries += len(added.counts)
            else:
                self._rewrite(encode_record(0, end, last, index.texts, index.counts))
                self._entries = len(index.counts)
        except OSError as exc:
            log.debug("cannot write the anchor index %s: %s", self.path, exc)
            self._broken, self.end = True, None
            return
        self.end = end

    def _append(self, frame: bytes) -> bool:
        """Append ``frame`` if the file is as this process left it (else False: write it whole)."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except FileNotFoundError:
            return False
        try:
            if os.fstat(fd).st_size != self._size:  # not ours as we left it: start it again
                return False
            write_all(fd, frame)
        finally:
            os.close(fd)
        self._size += len(frame)
        return True

    def _rewrite(self, frame: bytes) -> None:
        """Replace the file with one holding ``frame``: a crash leaves the old file or this
        (``replace_file``: a temporary name of this call's own, so two processes rewriting at
        once never write into one temporary file)."""
        make_private_directory(self.path.parent)
        data = self._magic + frame
        replace_file(self.path, data, 0o600)
        self._size = len(data)


def _matches(header: RecordHeader, events: Sequence[Event], upto: int) -> bool:
    """Whether the log's first ``header.end`` events, no more than ``upto``, are the ones the
    record's run was counted over (its last event is the one it names)."""
    end = header.end
    if end > upto or end > len(events):
        return False
    return end == 0 or event_key(events[end - 1]) == header.last
