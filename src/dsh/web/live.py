"""The live stream of one session: every appended event (as its exact stored JSON), stream
deltas, compaction progress, run status, stats and approval requests.

A ``LiveHub`` exists per session id, whether or not the session is open for writing here, so a
browser can watch a session before it is resumed. Messages are JSON text frames::

    {"kind": "hello", "session": {...}}           first frame (then catch-up events)
    {"kind": "event", "event": {...}}             an appended event, byte-identical to the log
                                                  (but for a base URL's secret an older dsh
                                                  recorded: masked, ``event_frame``)
    {"kind": "delta", "channel": "text"|"reasoning"|"tool"|"was-reasoning", "text": "..."}
                                                  (after the catch-up: what the running
                                                  call streamed before the page joined;
                                                  was-reasoning: the text so far was
                                                  reasoning, a lone </think> closed it)
    {"kind": "tail", "seq": SEQ, "lines": ["..."]}
                                                  the last lines the running tool call
                                                  logged at SEQ printed (dsh.agent.tool_progress;
                                                  [] once none; also after the catch-up)
    {"kind": "progress", "progress": {passId, phase, done, total} | null}
    {"kind": "status", "running": "turn"|"compact"|null, "open": bool}
    {"kind": "stats", "stats": {...}}
    {"kind": "approval", "approval": {id, tool, args}}
    {"kind": "approval-resolved", "id": ..., "answer": ...}
    {"kind": "warning", "warning": {id, session, level, text, count, first, last}}
    {"kind": "error", "error": {code, message}}

(``warning``: one of dsh's warnings raised serving this session, ``dsh.web.warning_feed``;
the hello carries those kept as ``warnings``.)

Events are encoded once (``encode_event``) and spliced into the frame, never re-serialised.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from dsh.agent.settings_record import as_recorded_today
from dsh.events import (
    CompactionEndEvent,
    CompactionPlanEvent,
    CompactionStartEvent,
    Event,
    SessionEndSeedEvent,
    TurnEndEvent,
    encode_event,
)
from dsh.store.live_file import CALL_ENDS, WAS_REASONING, fold_deltas

log = logging.getLogger("dsh.web")

MAX_QUEUE = 50_000
"""A subscriber this far behind is dropped (its socket is closed; the page reconnects)."""


def frame(kind: str, **fields: Any) -> str:
    return json.dumps({"kind": kind, **fields}, separators=(",", ":"), ensure_ascii=False)


def event_frame(event: Event) -> str:
    """``event``'s frame: its JSON as logged, but for a base URL's secret an older dsh recorded
    in a ``session/settings`` (masked, as it is recorded now: ``as_recorded_today``)."""
    return '{"kind":"event","event":' + encode_event(as_recorded_today(event)).decode() + "}"


class Streamed:
    """What the model call running in a session open here has streamed so far, as a page
    assembles it (text and reasoning joined, the last tool name): a page that joins during the
    call gets it as ``delta`` frames (``frames``), right after the events it catches up with,
    then the deltas that come after (``stream``). A call end (``CALL_ENDS``: its reply is
    logged, or the turn ended) forgets it."""

    def __init__(self) -> None:
        self._text: dict[str, list[str]] = {}

    def add(self, channel: str, text: str) -> None:
        if channel == WAS_REASONING:  # the text so far was reasoning: the page moves it too
            joined = [(c, "".join(self._text.pop(c, ()))) for c in ("reasoning", "text")]
            reasoning, _ = fold_deltas([*joined, (WAS_REASONING, "")])
            if reasoning:
                self._text["reasoning"] = [reasoning]
        elif channel == "tool":
            self._text[channel] = [text]
        else:
            self._text.setdefault(channel, []).append(text)

    def heard(self, event: Event) -> None:
        if isinstance(event, CALL_ENDS):
            self._text.clear()

    def frames(self) -> list[str]:
        return [frame("delta", channel=c, text="".join(t)) for c, t in self._text.items() if t]


def joined_mid_call(
    catch_up: Sequence[Event],
    after: int | None,
    joined: tuple[int, list[str]] | None,
    *,
    exact: bool,
) -> tuple[Sequence[Event], list[str]]:
    """The catch-up and the ``delta`` frames of a page joining during a call: ``joined`` is the
    seq of the last event its pages had and what the call streamed since (``Handle.joined``,
    ``Follower.joined``), taken as the page subscribed; ``catch_up`` the events past ``after``
    read since. ``exact`` (the session's own observer publishes every event logged after that
    seq): the catch-up stops there, the later events come to the subscriber after the frames.
    Else (a follower) the frames go only with a catch-up that does not pass that seq, one that
    passes it may hold the call's end. None for a page ahead of them (its reply may be there)."""
    if joined is None:
        return catch_up, []
    last, frames = joined
    if after is not None and after > last:
        return catch_up, []
    if exact:
        return [event for event in catch_up if event.seq <= last], frames
    if catch_up and catch_up[-1].seq > last:
        return catch_up, []
    return catch_up, frames


@dataclass(slots=True)
class Progress:
    pass_id: str
    phase: str  # "summarizing" until compaction/plan, then "committing"
    done: int = 0
    total: int | None = None

    def public(self) -> dict[str, Any]:
        return {"passId": self.pass_id, "phase": self.phase, "done": self.done, "total": self.total}


class ProgressTracker:
    """Compaction progress from the events alone: a pass starts with its first
    ``compaction/start``, learns its region count from ``compaction/plan`` and counts each
    region's ``compaction/end``; an error end, the last region, a turn end or a new lifecycle
    ends it."""

    def __init__(self) -> None:
        self.current: Progress | None = None

    def feed(self, event: Event) -> bool:
        """Update from one event; True if the progress changed."""
        current = self.current
        if isinstance(event, CompactionStartEvent):
            pass_id = event.data.pass_id or event.data.compaction_id
            if current is None or current.pass_id != pass_id:
                self.current = Progress(pass_id, "summarizing")
                return True
            return False
        if current is None:
            return False
        if isinstance(event, CompactionPlanEvent):
            current.phase, current.total, current.done = "committing", len(event.data.regions), 0
            return True
        if isinstance(event, CompactionEndEvent):
            if event.data.error is not None or current.total is None:
                self.current = None
            else:
                current.done += 1
                if current.done >= current.total:
                    self.current = None
            return True
        if isinstance(event, TurnEndEvent | SessionEndSeedEvent):
            self.current = None
            return True
        return False

    def public(self) -> dict[str, Any] | None:
        return self.current.public() if self.current is not None else None


class Subscriber:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.dropped = False

    def push(self, message: str) -> None:
        if self.dropped:
            return
        if self.queue.qsize() >= MAX_QUEUE:
            self.dropped = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(message)


class LiveHub:
    """Fan-out of one session's live messages to its subscribers."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.subscribers: set[Subscriber] = set()
        self.progress = ProgressTracker()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None

    def bind_loop(self) -> None:
        """Remember the server's loop so pushes from other threads are handed to it."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()

    def publish(self, message: str) -> None:
        if not self.subscribers:
            return
        if self._loop is not None and threading.get_ident() != self._thread:
            self._loop.call_soon_threadsafe(self._fan_out, message)
        else:
            self._fan_out(message)

    def _fan_out(self, message: str) -> None:
        for subscriber in list(self.subscribers):
            subscriber.push(message)

    def on_event(self, event: Event) -> None:
        """Session observer: the event, then any progress change it causes."""
        self.publish(event_frame(event))
        if self.progress.feed(event):
            self.publish(frame("progress", progress=self.progress.public()))

    def subscribe(self) -> Subscriber:
        subscriber = Subscriber()
        self.subscribers.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)


async def stream(
    websocket: WebSocket,
    hub: LiveHub,
    hello: str,
    catch_up: Sequence[Event],
    subscriber: Subscriber,
    streamed: Sequence[str] = (),
) -> None:
    """Serve one accepted socket: hello, catch-up events, what the running call streamed so far
    (``streamed``: ``Streamed.frames``), then live messages until either side goes away.
    ``subscriber`` was subscribed before ``catch_up`` was read, so nothing is lost between them
    (the page drops duplicates by seq); with ``streamed``, it was subscribed as they were taken
    and ``catch_up`` ends at the event logged then: no delta comes twice or goes missing."""
    try:
        await websocket.send_text(hello)
        for event in catch_up:
            await websocket.send_text(event_frame(event))
        for delta in streamed:
            await websocket.send_text(delta)
        receiver = asyncio.create_task(_drain(websocket))
        try:
            while True:
                getter = asyncio.create_task(subscriber.queue.get())
                done, _ = await asyncio.wait(
                    {getter, receiver}, return_when=asyncio.FIRST_COMPLETED
                )
                if getter not in done:
                    getter.cancel()
                    break
                message = getter.result()
                if message is None:  # too far behind: let the page reconnect and resync
                    await websocket.close(code=4408, reason="subscriber fell behind")
                    break
                await websocket.send_text(message)
        finally:
            receiver.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await receiver
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass
    finally:
        hub.unsubscribe(subscriber)


async def _drain(websocket: WebSocket) -> None:
    """Read (and ignore) client frames until the socket closes."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
