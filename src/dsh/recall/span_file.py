"""Lower-cased checkpoint spans kept on disk, so a search in a new process starts warm.

``history_search`` scans the lower-cased text of every shadowed message. Rendering and
lower-casing a long session's spans costs several times the scan itself, and every process
(``dsh recall search`` runs once per command; a resumed agent starts empty) paid it again. A
span depends only on the log's events below its summary, and the log is append-only, so the
lower-cased span of a checkpoint can be kept for good: one file per session
(``<home>/cache/recall/<id>.spans``, see ``dsh.store.span_cache_path``), appended to as spans are
first rendered (one write at the end of a search), read whole by the next process that searches.

The file holds a first line naming the format and a fingerprint of the renderer (the rendering
of a fixed set of probe messages and the parts of a long probe text: if the renderer's output
changes, old files stop matching and are replaced), then records: a frame (header length, text
length, CRC32 of both), a msgpack header ``[summarySeq, key, nodeSeqs, textLengths]`` and the
span's lower-cased messages as UTF-8 (``surrogatepass``), one after another. ``key`` is the
CRC32 of the summary event's encoding: a record is used only for that very summary at that seq.
A search looks for the needle's UTF-8 in each message's bytes, in place (a UTF-8 needle only
matches at character boundaries, so the first byte match is the first character match); only a
hit is decoded. A record that does not check out ends the reading (the rest is computed again),
and the next write replaces the file with its whole records and the new ones (appended behind
bytes no reader gets past, they would never be read, and the file would grow at every search).
A new file appears whole, first line and first records (written aside, then linked into place),
and every other write appends (``O_APPEND``): two processes writing at once never write over
each other. Any error reading or writing the file only means the spans are rendered as without it.
``dsh sessions repair`` deletes the file when it cuts a log, the one operation that changes
events below an existing summary.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import mmap
import os
import secrets
import zlib
from dataclasses import dataclass
from pathlib import Path

import msgspec

from dsh.config.file_update import replace_file
from dsh.config.private_dirs import make_private_directory
from dsh.events import (
    CompactionSummaryEvent,
    Message,
    ModelSource,
    PluginSource,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSource,
    UserSource,
    encode_event,
)
from dsh.recall.parts import PART_CHARS, split_parts
from dsh.store.fd_write import write_all
from dsh.store.frames import frame_bytes, read_frames
from dsh.transcript import render_message

log = logging.getLogger("dsh.recall")

ENCODING = "utf-8"
ERRORS = "surrogatepass"  # a lone surrogate (JSON allows one) still round-trips


class SpanHeader(msgspec.Struct, array_like=True, frozen=True, gc=False):
    seq: int
    key: int
    nodes: tuple[int, ...]
    lengths: tuple[int, ...]
    """Byte length of each lower-cased message."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(SpanHeader)


@dataclass(frozen=True, slots=True)
class StoredSpan:
    """One checkpoint's span as stored: the node seq of each rendered message, and where each
    lower-cased message's UTF-8 lies in ``data`` (the file, mapped)."""

    key: int
    nodes: tuple[int, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    data: mmap.mmap

    def find(self, needle: bytes) -> list[tuple[int, int]]:
        """(message index, character position in the lower-cased message) of the first match
        of ``needle`` (lower-cased, encoded as here) in every message that has one."""
        found = []
        find = self.data.find
        for index, (start, end) in enumerate(zip(self.starts, self.ends, strict=True)):
            at = find(needle, start, end)
            if at >= 0:
                found.append((index, len(self.data[start:at].decode(ENCODING, ERRORS))))
        return found

    def message(self, index: int) -> str:
        """Lower-cased message ``index``, decoded."""
        return self.data[self.starts[index] : self.ends[index]].decode(ENCODING, ERRORS)

    def lowered(self) -> tuple[str, ...]:
        """The lower-cased messages, decoded."""
        return tuple(
            self.data[start:end].decode(ENCODING, ERRORS)
            for start, end in zip(self.starts, self.ends, strict=True)
        )


def summary_key(summary: CompactionSummaryEvent) -> int:
    """What a record must match to stand for ``summary``'s span."""
    return zlib.crc32(encode_event(summary))


def encode_text(text: str) -> bytes:
    return text.encode(ENCODING, ERRORS)


def _renderer_fingerprint() -> int:
    probes = [
        Message(id="p1", role="user", content=(TextBlock(text="Probe"),), source=UserSource()),
        Message(
            id="p2",
            role="assistant",
            content=(TextBlock(text="x"), ToolCallBlock(id="c", name="n", arguments="{}")),
            source=ModelSource(provider="p", model="m"),
        ),
        Message(
            id="p3",
            role="tool",
            content=(ToolResultBlock(tool_call_id="c", content=(TextBlock(text="r"),)),),
            source=ToolSource(call_id="c"),
        ),
        Message(
            id="p4",
            role="user",
            content=(TextBlock(text="s"),),
            source=PluginSource(plugin="compact", compaction_id="k"),
        ),
    ]
    rendered = [render_message(m) for m in probes] + [render_message(probes[3], label="[l]")]
    long_probe = "ab\n" * PART_CHARS + "c" * (3 * PART_CHARS)  # line breaks, then one long line
    rendered += split_parts(long_probe)
    return zlib.crc32("\x00".join(rendered).encode())


FLUSH_BYTES = 16 << 20
"""Queued span bytes that make :meth:`SpanFile.put` write them out without waiting for a flush."""

MAGIC = b"dsh-spans 3 %08x\n" % _renderer_fingerprint()
"""Format 2: a pruned tool result's span holds the original, not the pruned copy; 3: so does
one pruned in the TypeScript harness's shape (an imported log)."""


class SpanFile:
    """The stored spans of one session's file (read once, on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._spans: dict[int, StoredSpan] | None = None
        self._dir_made = False
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._whole: bytes | None = None
        """The file's first line and whole records, when the read found more after them."""

    def get(self, summary: CompactionSummaryEvent) -> StoredSpan | None:
        """The stored span of exactly ``summary``, if the file has it."""
        if self._spans is None:
            self._spans = self._read()
        span = self._spans.get(summary.seq)
        return span if span is not None and span.key == summary_key(summary) else None

    def put(
        self, summary: CompactionSummaryEvent, nodes: tuple[int, ...], lowered: tuple[str, ...]
    ) -> None:
        """Queue the span of ``summary`` to be appended by the next :meth:`flush` (done here
        once ``FLUSH_BYTES`` are queued)."""
        texts = [encode_text(m) for m in lowered]
        header = _encoder.encode(
            SpanHeader(summary.seq, summary_key(summary), nodes, tuple(len(t) for t in texts))
        )
        text = b"".join(texts)
        self._pending += frame_bytes(header, text)
        self._pending_bytes += len(header) + len(text)
        if self._pending_bytes >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Append the queued spans (one write); a failure is logged and otherwise ignored: the
        file is a cache."""
        if not self._pending:
            return
        frames = b"".join(self._pending)
        self._pending, self._pending_bytes = [], 0
        try:
            self._append(frames)
        except OSError as exc:
            log.debug("cannot write the span cache %s: %s", self.path, exc)

    def _append(self, frame: bytes) -> None:
        if not self._dir_made:
            make_private_directory(self.path.parent)
            self._dir_made = True
        append_records(self.path, MAGIC, frame, self._whole)
        self._whole = None

    def _read(self) -> dict[int, StoredSpan]:
        data = map_file(self.path)
        if data is None:
            if _is_empty(self.path):  # not even the first line: write it whole
                self._whole = MAGIC
            return {}
        if data[: len(MAGIC)] != MAGIC:  # another format or renderer: start the file again
            with contextlib.suppress(OSError):
                self.path.unlink()
            return {}
        spans: dict[int, StoredSpan] = {}
        end = len(MAGIC)
        for frame in read_frames(data, len(MAGIC)):
            header = _decoder.decode(frame.header)
            starts = list(itertools.accumulate(header.lengths, initial=frame.body_start))
            spans[header.seq] = StoredSpan(  # the latest record of a seq wins
                header.key, header.nodes, tuple(starts[:-1]), tuple(starts[1:]), data
            )
            end = frame.stop
        if end != len(data):  # a torn or damaged record: the next write repairs the file
            self._whole = data[:end]
        return spans


def append_records(path: Path, magic: bytes, records: bytes, whole: bytes | None = None) -> None:
    """Add ``records`` to the derived file at ``path``, whose first line is ``magic``.

    ``whole``: a reader found the file's whole records (with its first line) to be these bytes,
    followed by more that do not check out; the file is replaced with ``whole`` and ``records``
    (a temporary file renamed over it) rather than appended to. Else the records are appended
    (``O_APPEND``: at the end as it is then, whoever else appends); a missing file is created
    with ``magic`` and ``records`` written aside and linked into place, so that no writer ever
    sees it without its first line nor writes over another's records."""
    if whole is not None:
        replace_file(path, whole + records, 0o644)
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    except FileNotFoundError:
        if _create(path, magic + records):
            return
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)  # another made it first
    try:
        write_all(fd, records)
    finally:
        os.close(fd)


def _create(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data``, whole as it appears; False if it exists already."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.new")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.link(temporary, path)
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    return True


def _is_empty(path: Path) -> bool:
    """Whether ``path`` is an empty file (a derived file whose creation left nothing)."""
    try:
        return path.stat().st_size == 0
    except OSError:
        return False


def map_file(path: Path) -> mmap.mmap | None:
    """The file's bytes, mapped read-only (searched in place, never copied); None if it cannot
    be read or is empty."""
    try:
        with path.open("rb") as handle:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return None
