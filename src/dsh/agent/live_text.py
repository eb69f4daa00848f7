"""The text a running model call has streamed so far, shared with other processes.

A session's log holds each reply once, whole, when it is logged, so a ``dsh web`` following a
session another process writes (``dsh.web.follow``) would see nothing of a reply while it
streams. The process running the call keeps what has streamed in a side file instead,
``<home>/cache/live/<id>.live`` (``dsh.store.derived.live_text_path``); the log never holds a
delta. The file is JSON lines::

    {"session": ID, "after": SEQ, "pid": PID, "started": MS}   the call
    {"channel": "text"|"reasoning"|"tool"|"was-reasoning", "text": "..."}   its deltas

``after`` is the seq of the last event logged when the call's first delta came: the call's end
(``CALL_ENDS``: its reply, its ``request/error``, the turn's end, or a new lifecycle's
``session/end-seed``) is logged after it, so a log holding a call end past ``after`` has ended
the call. ``pid`` is the writer's (a file whose writer is gone is stale); ``started`` (epoch
ms) tells two calls apart. A delta is what the page of a turn run in its own process is sent
(``stream_delta``): text and reasoning pieces, the name of a tool call being written, and
``was-reasoning`` (no text) when a lone ``</think>`` made the text so far reasoning
(``TextWasReasoning``): a reader moves it, as the terminal UI does.

``LiveTextWriter`` (one per session opened in a process: ``share_stream``, which
``dsh.agent.wiring.build_agent`` wires into every agent every face builds) makes the file at a
call's first delta, written beside it and renamed over it, so a reader never sees part of an
old call with a new one; it appends the deltas in batches (at most every ``FLUSH_SECONDS``,
at once when ``FLUSH_BYTES`` wait) and removes the file when the session logs the call's end.
It never fails a turn: a file it cannot write means no side file for that session from then on,
and one warning per process.

The format (``LiveCall``, the line parsers, ``CALL_ENDS``) is ``dsh.store.live_file``'s, one
layer down: the crash repair reads the file a killed writer left and logs its text as the
call's interrupted reply when the session is next opened for writing.

``LiveTextTail`` reads the file as it grows: the call it names and the deltas appended since
its last read; a line still being written waits for its newline, a file replaced by a new call
is read from its start, and no file is no call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO
from weakref import WeakKeyDictionary

from dsh.config.private_dirs import make_private_directory
from dsh.events import Event
from dsh.llm.types import ReasoningDelta, StreamEvent, TextDelta, TextWasReasoning, ToolCallDelta
from dsh.store.base import now_millis
from dsh.store.derived import live_text_path
from dsh.store.fd_write import write_all
from dsh.store.live_file import (
    CALL_ENDS,
    WAS_REASONING,
    Delta,
    LiveCall,
    parse_call,
    parse_delta,
)
from dsh.surface import Session

log = logging.getLogger("dsh.agent")

FLUSH_SECONDS = 0.05
"""The longest a streamed delta waits in the writer before it is written to the file."""
FLUSH_BYTES = 4096
"""Deltas this large (in characters) waiting are written at once."""
_warned = False


def stream_delta(event: StreamEvent) -> Delta | None:
    """What a stream event shows while it streams (None: nothing): a text or reasoning piece,
    the name of the tool call being written (the ``tool`` channel names the latest one), or
    that the text so far was reasoning (``was-reasoning``, no text)."""
    if isinstance(event, TextWasReasoning):
        return WAS_REASONING, ""
    if isinstance(event, TextDelta) and event.text:
        return "text", event.text
    if isinstance(event, ReasoningDelta) and event.text:
        return "reasoning", event.text
    if isinstance(event, ToolCallDelta) and event.name:
        return "tool", event.name
    return None


def _line(value: dict[str, Any]) -> bytes:
    # ASCII escapes: any str (a lone surrogate too) encodes
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


class LiveTextWriter:
    """Writes the streamed text of one session's model calls to its side file (see above).
    Used where its session is, on the face's event loop (a ``Session`` is not thread-safe)."""

    def __init__(self, path: Path, session_id: str, last_seq: int) -> None:
        self.path = path
        self.session_id = session_id
        self.last_seq = last_seq
        """The seq of the last event the session logged."""
        self.call: LiveCall | None = None
        """The call streaming now (None: none)."""
        self.broken = False
        """Writing failed once: this session shares nothing more."""
        self._fd: int | None = None
        self._pending: list[tuple[str, list[str]]] = []
        """The deltas not yet written: runs of one channel's pieces (a tool name alone)."""
        self._pieces: list[str] = []
        """The pieces of the last run (text or reasoning: the next one of its channel joins)."""
        self._channel: str | None = None
        self._pending_size = 0
        self._timer: asyncio.TimerHandle | None = None

    def heard(self, event: Event) -> None:
        """The session logged ``event``: a call end ends the call (its file goes)."""
        self.last_seq = event.seq
        if self.call is not None and isinstance(event, CALL_ENDS):
            try:
                self._end()
            except Exception as exc:
                self._give_up(exc)

    def streamed(self, event: StreamEvent) -> None:
        """The running call streamed ``event``: its delta is kept for the file (the first
        starts the call's file)."""
        if self.broken:
            return
        delta = stream_delta(event)
        if delta is None:
            return
        channel, text = delta
        try:
            if self.call is None:
                self._begin()
            if channel == self._channel:
                self._pieces.append(text)
            else:
                self._pieces = [text]
                self._pending.append((channel, self._pieces))
                self._channel = channel if channel in ("text", "reasoning") else None
            self._pending_size += len(text)
            if self._pending_size >= FLUSH_BYTES:
                self._flush()
            elif self._timer is None:
                self._schedule()
        except Exception as exc:
            self._give_up(exc)

    def _begin(self) -> None:
        call = LiveCall(self.session_id, self.last_seq, os.getpid(), now_millis())
        make_private_directory(self.path.parent)
        beside = self.path.with_name(f".{self.path.name}.{call.pid}")
        fd = os.open(beside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            header = {"session": call.session, "after": call.after, "pid": call.pid}
            write_all(fd, _line({**header, "started": call.started}))
            os.replace(beside, self.path)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                beside.unlink()
            raise
        self._fd, self.call = fd, call

    def _schedule(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # streamed outside an event loop: nothing would flush it later
            self._flush()
            return
        self._timer = loop.call_later(FLUSH_SECONDS, self._due)

    def _due(self) -> None:
        self._timer = None
        try:
            self._flush()
        except Exception as exc:
            self._give_up(exc)

    def _flush(self) -> None:
        pending = self._pending
        self._drop_pending()
        if pending and self._fd is not None:
            lines = [_line({"channel": c, "text": "".join(texts)}) for c, texts in pending]
            write_all(self._fd, b"".join(lines))

    def _end(self) -> None:
        self._drop_pending()
        self.call = None
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def _drop_pending(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending, self._pieces, self._channel, self._pending_size = [], [], None, 0

    def _give_up(self, error: Exception) -> None:
        global _warned
        self.broken = True
        with contextlib.suppress(OSError):
            self._end()
        if not _warned:
            _warned = True
            log.warning(
                "the reply as it streams is not shown to other processes (%s): %s",
                self.path,
                error,
            )


_WRITERS: WeakKeyDictionary[Session, LiveTextWriter] = WeakKeyDictionary()


def share_stream(
    session: Session, home: Path, on_stream: Callable[[StreamEvent], None] | None
) -> Callable[[StreamEvent], None]:
    """``on_stream`` (None: nothing), with each delta also written to ``session``'s side file
    under ``home`` by the session's one writer in this process (made when the first agent on
    this opened session is built, and told of every event the session logs)."""
    writer = _WRITERS.get(session)
    if writer is None:
        path = live_text_path(home, session.id)
        writer = LiveTextWriter(path, session.id, len(session.events) - 1)
        session.subscribe(writer.heard)
        _WRITERS[session] = writer
    shared = writer

    def listener(event: StreamEvent) -> None:
        shared.streamed(event)
        if on_stream is not None:
            on_stream(event)

    return listener


class LiveTextTail:
    """Reads one side file as it grows (see above)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.call: LiveCall | None = None
        """The call the file read names (None: no file, or its first line is not whole)."""
        self._file: BinaryIO | None = None
        self._inode: tuple[int, int] | None = None
        self._rest = b""
        """The start of a line still being written."""
        self._unreadable = False
        """The file's first line names no call: it is passed over until replaced."""

    def read(self) -> tuple[LiveCall | None, list[Delta]]:
        """The call the file names now and the deltas appended since the last read (from the
        call's start when the file is new to this tail); no file: ``(None, [])``."""
        try:
            on_disk = os.stat(self.path)
        except OSError:
            self.close()
            return None, []
        if self._file is None or self._inode != (on_disk.st_dev, on_disk.st_ino):
            self.close()
            try:
                self._file = open(self.path, "rb")  # noqa: SIM115  kept open between reads
            except OSError:
                return None, []
            opened = os.fstat(self._file.fileno())
            self._inode = opened.st_dev, opened.st_ino
        try:
            lines = (self._rest + self._file.read()).split(b"\n")
        except OSError:
            self.close()
            return None, []
        self._rest = lines.pop()
        deltas: list[Delta] = []
        for line in lines:
            if self._unreadable:
                break
            if self.call is None:
                self.call = parse_call(line)
                self._unreadable = self.call is None
                continue
            delta = parse_delta(line)
            if delta is not None:
                deltas.append(delta)
        return self.call, deltas

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self._inode, self.call, self._rest, self._unreadable = (
            None,
            None,
            None,
            b"",
            False,
        )
