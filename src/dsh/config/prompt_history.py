"""The composer's prompt history on disk: what up / down and ctrl+r walk, across runs of dsh.

``$DSH_HOME/prompt_history.jsonl`` holds one JSON object a line, ``{"text": …, "time": …}``,
with ``"pasted": [[start, end], …]`` when the prompt held long pastes (the character spans of
each in ``text``: the terminal UI shows them folded again when the prompt is recalled), oldest
first, created ``0600`` (it holds what you typed). Each prompt sent is appended with one
``O_APPEND`` write of its whole line, under an exclusive ``flock``, so the lines of dsh
instances sending at once never interleave; a write cut short (a full disk) is taken back, and a
line left unended (a crash) is ended before the next, so it never swallows the next prompt.
Loading keeps the newest :data:`MAX_ENTRIES` entries (within :data:`MAX_BYTES` of lines) and
skips a line that is not one (torn by a crash, edited by hand, not UTF-8): nothing in the file
stops dsh. A file found with more, or with such a line, is written again with only what was kept
(a temporary file renamed over it, under the same lock; a writer that waited on the old file
writes to the new one). ``changed`` tells, with one ``stat``, whether another instance wrote to
the file since it was read, so a running terminal UI reads it again before walking it. A prompt
over :data:`MAX_ENTRY_CHARS` characters is kept for this run only. A file dsh cannot read or
write is said once, as a warning, and the history then lives in memory for this run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path

from dsh.config.private_dirs import make_private_directory

log = logging.getLogger(__name__)

FILE_NAME = "prompt_history.jsonl"
MAX_ENTRIES = 1000
MAX_BYTES = 4 * 1024 * 1024
"""The newest lines kept, in bytes (a few very long prompts do not make every start slow)."""
MAX_ENTRY_CHARS = 100_000
READ_AT_MOST = 2 * MAX_BYTES
"""Bytes read from the end of the file: an older part of a file grown beyond it is dropped."""
FILE_MODE = 0o600


Signature = tuple[int, int, int]
"""A file's inode, size and modification time (ns): what tells that it changed."""


def _stat_signature(found: os.stat_result) -> Signature:
    return found.st_ino, found.st_size, found.st_mtime_ns


def _signature(path: Path) -> Signature | None:
    try:
        return _stat_signature(os.stat(path))
    except OSError:
        return None


Spans = tuple[tuple[int, int], ...]
"""Where a prompt's long pastes are in it: ``(start, end)`` character offsets, in order."""


def entry_line(text: str, when: float, pasted: Spans = ()) -> bytes:
    """The line one prompt takes (ASCII: any text, lone surrogates included, round-trips)."""
    entry: dict[str, object] = {"text": text, "time": round(when, 3)}
    if pasted:
        entry["pasted"] = [list(span) for span in pasted]
    return (json.dumps(entry) + "\n").encode("ascii")


def entry_pasted(line: bytes, text: str) -> Spans:
    """The spans of the pastes an entry's line gives, when they fit ``text`` (else none: the
    prompt shows unfolded, nothing else is lost)."""
    try:
        found = json.loads(line).get("pasted")
    except (ValueError, AttributeError):
        return ()
    if not isinstance(found, list):
        return ()
    spans, end = [], 0
    for span in found:
        ok = isinstance(span, list) and len(span) == 2 and all(type(n) is int for n in span)
        if not ok or not end <= span[0] < span[1] <= len(text):
            return ()
        spans.append((span[0], span[1]))
        end = span[1]
    return tuple(spans)


def entry_text(line: bytes) -> str | None:
    """The prompt a line holds; None for a line that is not an entry (skipped)."""
    try:
        found = json.loads(line)
    except ValueError:  # not JSON, not UTF-8
        return None
    if not isinstance(found, dict):
        return None
    text = found.get("text")
    return text if isinstance(text, str) and text else None


def parse(data: bytes) -> tuple[list[tuple[str, bytes]], bool]:
    """The entries of a file's bytes, oldest first, as (text, line), the newest
    :data:`MAX_ENTRIES` within :data:`MAX_BYTES`; and whether the file should be written
    again (a line skipped, a last line torn, more than is kept)."""
    lines = data.split(b"\n")
    rewrite = lines[-1] != b""  # the last line has no end: torn (a crash in mid-write)
    entries: list[tuple[str, bytes]] = []
    for raw in lines[:-1]:
        text = entry_text(raw)
        if text is None:
            rewrite = rewrite or raw.strip() != b""
            continue
        entries.append((text, raw + b"\n"))
    kept = newest(entries)
    return kept, rewrite or len(kept) < len(entries)


def newest(entries: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """The newest entries, at most :data:`MAX_ENTRIES` and :data:`MAX_BYTES` of lines."""
    size, start = 0, len(entries)
    while start > 0 and len(entries) - start < MAX_ENTRIES:
        size += len(entries[start - 1][1])
        if size > MAX_BYTES:
            break
        start -= 1
    return entries[start:]


def distinct(prompts: list[str]) -> list[str]:
    """``prompts`` (oldest first) with each text once, where it was last."""
    return list(reversed(dict.fromkeys(reversed(prompts))))


def with_session_prompts(saved: list[str], session: list[str]) -> list[str]:
    """The history to walk in a session: ``saved`` (the file's, oldest first), then the
    session's own prompts as the newest, each text once."""
    own = distinct(session)
    kept = set(own)
    return [*(p for p in distinct(saved) if p not in kept), *own]


def _write_line(fd: int, size: int, line: bytes) -> None:
    """Append ``line`` to the history open on ``fd`` (locked, ``size`` bytes long) whole: every
    byte, however many writes it takes; a write that fails (a full disk) cuts the file back to
    ``size``, so no part of the line stays to swallow the next one. A file that does not end
    its last line (torn by a crash, or a cut that failed too) gets that line ended first: the
    torn line alone is lost, never the prompt after it."""
    if size and os.pread(fd, 1, size - 1) != b"\n":
        line = b"\n" + line
    left = line
    try:
        while left:  # one write, but for a short one (a slice copied only then)
            left = left[os.write(fd, left) :]
    except OSError:
        if len(left) < len(line):  # part of it written
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
        raise


class PromptHistory:
    """The history file of one ``$DSH_HOME``; ``None`` for a path keeps it in memory only."""

    def __init__(self, home: Path | None) -> None:
        self.path = home / FILE_NAME if home is not None else None
        self._warned = False
        self._seen: Signature | None = None
        """The file as this history last read or wrote it (``changed``)."""
        self.pasted: dict[str, Spans] = {}
        """The spans of the long pastes of the prompts read or added that held any."""

    def changed(self) -> bool:
        """Whether the file is not as this history last read or wrote it: another dsh (a
        ``dsh web``, another terminal) appended to it since. One ``stat``."""
        return self.path is not None and _signature(self.path) != self._seen

    def load(self) -> list[str]:
        """The prompts on file, oldest first ([] when there is none, or it cannot be read)."""
        if self.path is None:
            return []
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            self._seen = None
            return []
        except OSError as exc:
            self._seen = _signature(self.path)  # said once: not read again until it changes
            self._warn("read", exc)
            return []
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            start = max(0, size - READ_AT_MOST)
            data = os.pread(fd, size - start, start)
            if start > 0:  # begun in mid-line: from the next whole one
                data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
            entries, rewrite = parse(data)
            if rewrite or start > 0:
                self._rewrite(line for _, line in entries)
            self._seen = _signature(self.path)  # under the lock: no other write in between
            for text, line in entries:
                if b'"pasted"' in line and (spans := entry_pasted(line, text)):
                    self.pasted[text] = spans
            return [text for text, _ in entries]
        except OSError as exc:
            self._seen = _signature(self.path)
            self._warn("read", exc)
            return []
        finally:
            os.close(fd)  # the lock with it

    def _rewrite(self, lines: Iterable[bytes]) -> None:
        """Replace the file (whose lock the caller holds) with ``lines``."""
        assert self.path is not None
        temporary = self.path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
        try:
            os.write(fd, b"".join(lines))
        finally:
            os.close(fd)
        os.replace(temporary, self.path)

    def append(self, text: str, pasted: Spans = ()) -> None:
        """Add ``text`` as the newest entry, with the spans of its long pastes: one write of
        its whole line, or nothing (see ``_write_line``)."""
        if pasted:
            self.pasted[text] = pasted
        if self.path is None or not text or len(text) > MAX_ENTRY_CHARS:
            return
        line = entry_line(text, time.time(), pasted)
        try:
            make_private_directory(self.path.parent)
            for _ in range(3):  # the file replaced (trimmed) while we waited: the new one
                fd = os.open(
                    self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE
                )
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    before = os.fstat(fd)
                    if before.st_ino != os.stat(self.path).st_ino:
                        continue
                    _write_line(fd, before.st_size, line)
                    if _stat_signature(before) == self._seen:  # only this line added since
                        self._seen = _stat_signature(os.fstat(fd))
                    return
                finally:
                    os.close(fd)
        except OSError as exc:
            self._warn("write", exc)

    def _warn(self, doing: str, exc: OSError) -> None:
        if not self._warned:
            self._warned = True
            reason = exc.strerror or type(exc).__name__
            log.warning(
                "Could not %s the prompt history %s (%s); it is kept for this run only.",
                doing,
                self.path,
                reason,
            )
