"""The live side file of a session, as a store reads it: its format, and the reply of a crashed
call recovered from it (``dsh.agent.live_text`` writes it; ``dsh.store.derived`` names its path).

The file is JSON lines: a header naming the call (``{"session", "after", "pid", "started"}``),
then its deltas in order (``{"channel": "text"|"reasoning"|"tool"|"was-reasoning", "text"}``;
``was-reasoning``, with no text: a lone ``</think>`` made the text so far reasoning,
``fold_deltas``). ``after`` is the
seq of the last event logged when the call's first delta came; a log holding a call end
(``CALL_ENDS``) past ``after`` has ended the call.

When a session is opened for writing, its writer lock is held, so no process streams a call of
it: a side file there was left by a process that died (or closed the session) mid-call. When the
crash repair finds the log's last turn open, and the file names this session and a call the log
has not ended, inside the open turn's open step (``recover_reply``), what had streamed is logged
as the call's outcome the way a stream a provider failure cut is logged in-process: a
``request/error`` {``code``: ``PROCESS_ENDED``} then the ``assistant/message`` {``interrupted``,
``errorCode``: ``PROCESS_ENDED``} holding the streamed reasoning and text (the names of tool
calls being written are not calls: they are left out). A file that is larger than
``MAX_LIVE_BYTES``, whose header is not whole or names another session or another call, or
whose lines are not all deltas (a line cut by the kill at the end is dropped) is not believed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.events import (
    APPEND,
    AssistantMessage,
    AssistantMessageEvent,
    Block,
    Event,
    Message,
    ModelSource,
    ReasoningBlock,
    RequestContextEvent,
    RequestError,
    RequestErrorEvent,
    SessionEndSeedEvent,
    StepStartEvent,
    TextBlock,
    TurnEndEvent,
)
from dsh.events.predicates import PROCESS_ENDED_CODE

CALL_ENDS = (AssistantMessageEvent, RequestErrorEvent, TurnEndEvent, SessionEndSeedEvent)
"""Logged events that end the model call streaming when they are logged."""
WAS_REASONING = "was-reasoning"
"""The channel of a delta saying the text streamed so far was reasoning (a lone ``</think>``
closed it: ``dsh.llm.types.TextWasReasoning``)."""
CHANNELS = ("text", "reasoning", "tool", WAS_REASONING)
MAX_LIVE_BYTES = 16 * 1024 * 1024
"""A side file larger than this is not read for a crashed call's reply (no reply is so long)."""
PROCESS_ENDED = PROCESS_ENDED_CODE
"""The error code of a reply recovered from the side file its dead process left."""
RECOVERED_NOTE = (
    "the process ended while the reply streamed; the text it had streamed was recovered from "
    "its live file"
)

Delta = tuple[str, str]
"""A channel and its text."""


@dataclass(frozen=True, slots=True)
class LiveCall:
    """The model call a side file holds the streamed text of."""

    session: str
    after: int
    """The seq of the last event logged when its first delta came."""
    pid: int
    started: int


@dataclass(frozen=True, slots=True)
class LiveFile:
    """A whole side file as read: its call and its deltas."""

    call: LiveCall
    deltas: tuple[Delta, ...]


def parse_call(line: bytes) -> LiveCall | None:
    """The call a side file's first line names (None: not a header)."""
    try:
        value = json.loads(line)
        call = LiveCall(value["session"], value["after"], value["pid"], value["started"])
    except (ValueError, TypeError, KeyError):
        return None
    fields = (call.after, call.pid, call.started)
    if not isinstance(call.session, str) or not all(type(field) is int for field in fields):
        return None
    return call


def parse_delta(line: bytes) -> Delta | None:
    """The delta a side file's later line holds (None: not a delta)."""
    try:
        value: Any = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    channel, text = value.get("channel"), value.get("text")
    if channel not in CHANNELS or not isinstance(text, str):
        return None
    return channel, text


def read_live_file(path: Path) -> LiveFile | None:
    """The side file at ``path`` whole, or None: none, unreadable, over ``MAX_LIVE_BYTES``, or
    not the format (a last line without its newline, cut as it was written, is left out)."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_LIVE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_LIVE_BYTES:
        return None
    lines = data.split(b"\n")
    lines.pop()  # after the last newline: empty, or a line the kill cut
    if not lines or (call := parse_call(lines[0])) is None:
        return None
    deltas = []
    for line in lines[1:]:
        delta = parse_delta(line)
        if delta is None:
            return None
        deltas.append(delta)
    return LiveFile(call, tuple(deltas))


def fold_deltas(deltas: Sequence[Delta]) -> tuple[str, str]:
    """The reasoning and the text ``deltas`` streamed, as the reply's message holds them: a
    ``was-reasoning`` delta moves the text before it to the reasoning (its leading whitespace
    dropped, as ``dsh.llm.assemble`` does)."""
    reasoning: list[str] = []
    text: list[str] = []
    for channel, piece in deltas:
        if channel == "reasoning":
            reasoning.append(piece)
        elif channel == "text":
            text.append(piece)
        elif channel == WAS_REASONING:
            reasoning.append("".join(text).lstrip())
            text = []
    return "".join(reasoning), "".join(text)


def _encodable(text: str) -> str:
    """``text`` with a split surrogate pair joined and any lone half made U+FFFD (the log's
    codec refuses surrogates; the file's JSON may carry them, as a model's stream can)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def recover_reply(
    events: Sequence[Event],
    live: LiveFile,
    *,
    session_id: str,
    turn_start: int,
    turn: int,
    first_seq: int,
    now_ms: int,
) -> tuple[RequestErrorEvent, AssistantMessageEvent] | None:
    """The ``request/error`` and interrupted ``assistant/message`` that log what ``live``'s
    call had streamed, seqs from ``first_seq``; none when the file is not of the call the open
    turn (its ``turn/start`` at ``turn_start``) left streaming, or holds no text (None)."""
    call = live.call
    if call.session != session_id or not turn_start <= call.after < len(events):
        return None
    if call.started < events[call.after].time:
        return None  # a call older than the event it says it came after: another lifecycle's
    if any(isinstance(event, CALL_ENDS) for event in events[call.after + 1 :]):
        return None  # the log ended the call: its reply (or error) is logged
    step = None
    for event in events[turn_start : call.after + 1]:
        if isinstance(event, StepStartEvent):
            step = event.data.step
    if step is None:
        return None
    reasoning, text = (_encodable(part) for part in fold_deltas(live.deltas))
    if not reasoning and not text:
        return None
    content: list[Block] = []
    if reasoning:
        content.append(ReasoningBlock(text=reasoning))
    if text:
        content.append(TextBlock(text=text))
    route = next(
        (e.data for e in reversed(events[: call.after + 1]) if isinstance(e, RequestContextEvent)),
        None,
    )
    provider, model = (route.provider, route.model) if route is not None else ("", "")
    message = Message(
        id=f"a-{turn}-{step}",
        role="assistant",
        content=tuple(content),
        source=ModelSource(provider=provider, model=model),
    )
    error = RequestError(
        turn=turn, step=step, code=PROCESS_ENDED, message=RECOVERED_NOTE, retryable=False
    )
    reply = AssistantMessage(
        turn=turn, step=step, message=message, interrupted=True, error_code=PROCESS_ENDED
    )
    return (
        RequestErrorEvent(seq=first_seq, time=now_ms, data=error),
        AssistantMessageEvent(seq=first_seq + 1, time=now_ms, data=reply, surface_op=APPEND),
    )


def remove_live_file(path: Path, session_id: str) -> bool:
    """Remove the side file at ``path`` if it names ``session_id`` (its writer is gone: the
    caller holds the session's writer lock); a file that names no call of it is left."""
    try:
        with open(path, "rb") as file:
            first = file.readline(64 * 1024)
    except OSError:
        return False
    call = parse_call(first) if first.endswith(b"\n") else None
    if call is None or call.session != session_id:
        return False
    try:
        os.unlink(path)
    except OSError:
        return False
    return True
