"""Crash repair: close what a dead process left open (docs/architecture.md, "The session log").

When a session is opened for writing and its last lifecycle left a turn without ``turn/end`` or
a compaction pass without ``compaction/end`` (before it logged a plan), the new lifecycle starts
with ``session/end-seed``; then each such pass is closed (``dsh.store.pass_repair``), then the
turn: the reply of the model call it left streaming, when the call's live side file holds what
had streamed (``dsh.store.live_file``: a ``request/error`` {``PROCESS_ENDED``} and the
interrupted ``assistant/message`` holding the text), a synthetic error result for every tool
call that has none (``TOOL_OUTCOME_UNKNOWN`` when the call was logged as started,
``TOOL_NOT_STARTED`` when only the model asked for it), ``step/end`` for an open step, and
``turn/end{interrupted}``. Each says so once, as a load warning. A pass that logged its plan is
left to the engine, which finishes it from the plan.

All of it is one append (one write, one transaction), and only once it is on disk is the side
file removed: a kill before the append leaves everything to the next open, a kill after it
leaves a file of a call the log has ended, which the next open does not log again, and removes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dsh.events import (
    APPEND,
    AssistantMessageEvent,
    Event,
    EventBase,
    Message,
    OpenCalls,
    ReasoningBlock,
    SessionEndSeed,
    SessionEndSeedEvent,
    StepEnd,
    StepEndEvent,
    StepStartEvent,
    TextBlock,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResult,
    ToolResultBlock,
    ToolResultEvent,
    ToolSource,
    TurnEnd,
    TurnEndEvent,
    TurnEndReason,
    TurnStartEvent,
)
from dsh.store.live_file import LiveFile, read_live_file, recover_reply, remove_live_file
from dsh.store.pass_repair import pass_repairs

if TYPE_CHECKING:
    from dsh.store.base import SessionLog

TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
TOOL_NOT_STARTED = "TOOL_NOT_STARTED"


def open_trailing_turn(events: Sequence[Event]) -> int | None:
    """Index of the ``turn/start`` of a turn that never ended, or None."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, TurnEndEvent):
            return None
        if isinstance(event, TurnStartEvent):
            return index
    return None


@dataclass(slots=True)
class AskedCall:
    """A tool call the model asked for in the turn being closed."""

    call_id: str
    name: str
    step: int
    started: ToolCallEvent | None = None
    """Its ``tool/call`` event, when the call was logged as started."""


@dataclass(slots=True)
class OpenTurn:
    """What closing a turn needs from its events."""

    unanswered: list[AskedCall]
    """The calls without a result, in the order the model asked for them."""
    open_step: int | None
    """The step without a ``step/end``, if any."""


def scan_open_turn(events: Iterable[Event]) -> OpenTurn:
    """Read a turn's events (from its ``turn/start`` on). Call ids may repeat across the turn's
    replies (servers that number each reply's calls from ``call_0``), so calls are paired by
    ``OpenCalls``: a ``tool/call`` or a result belongs to the nearest earlier asked call of its
    id that has none yet."""
    asked: OpenCalls[AskedCall] = OpenCalls()
    open_step: int | None = None
    for event in events:
        if isinstance(event, StepStartEvent):
            open_step = event.data.step
        elif isinstance(event, StepEndEvent):
            open_step = None
        elif isinstance(event, AssistantMessageEvent) and event.surface_op == APPEND:
            for c in event.data.message.tool_calls():
                asked.open(c.id, AskedCall(c.id, c.name, event.data.step))
        elif isinstance(event, ToolCallEvent):
            call = asked.latest(event.data.call_id)
            if call is not None and call.started is None:
                call.started = event
        elif isinstance(event, ToolResultEvent) and event.surface_op == APPEND:
            block = event.data.message.content[0]
            if isinstance(block, ToolResultBlock):
                asked.answer(block.tool_call_id)
    return OpenTurn(asked.pending(), open_step)


@dataclass(slots=True)
class CrashRepair:
    """What opening a session for writing appends, and the warnings that say so."""

    events: list[Event] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def repair_at_open(
    log: SessionLog,
    *,
    now_ms: int,
    live_path: Path | None = None,
    crashed: bool = True,
    imported: bool = False,
) -> None:
    """Append what a crashed lifecycle of ``log`` (open for writing) left open, and add the
    warnings that say so to its load warnings (each once: the next open finds it closed).
    ``live_path``: the session's live side file (``dsh.store.derived.live_text_path``), read
    for the reply of a call left streaming, and removed once the repair is on disk.
    ``crashed``: False when the last writer released its lock cleanly
    (``WriteLock.unclean_holder`` None), so it did not crash: it ended with a turn open because
    it could not write the rest (a full disk), and the warning says so. ``imported``:
    ``dsh sessions import`` made the session (``imported_log``)."""
    live = read_live_file(live_path) if live_path is not None else None
    repair = plan_crash_repair(
        log.events,
        now_ms=now_ms,
        live=live,
        session_id=log.id,
        crashed=crashed,
        imported=imported,
    )
    if repair.events:
        log.repaired_from = repair.events[0].seq
        log.append(repair.events)
        log.warnings.extend(repair.warnings)
    if live_path is not None and live_path.exists():
        log.sync()  # the reply is on disk before the file that held it goes
        remove_live_file(live_path, log.id)


def plan_crash_repair(
    events: Sequence[Event],
    *,
    now_ms: int,
    live: LiveFile | None = None,
    session_id: str | None = None,
    crashed: bool = True,
    imported: bool = False,
) -> CrashRepair:
    """The events that close the passes and the trailing turn a dead process left open, seqs
    continuing the log, and their warnings; nothing when none is open. ``live``: the session's
    side file (``session_id``'s), whose streamed reply is logged when it is the open turn's.
    ``imported``: an imported session, so a log without ``session/end-seed`` (no dsh process
    has written to it since, see ``_who``) had its turn left open before it was imported."""
    passes, said = pass_repairs(events, len(events) + 1, now_ms=now_ms)
    start = open_trailing_turn(events)
    if start is None and not passes:
        return CrashRepair()
    seed = SessionEndSeedEvent(seq=len(events), time=now_ms, data=SessionEndSeed())
    repairs: list[EventBase] = [seed, *passes]
    if start is not None:
        turn_start = events[start]
        assert isinstance(turn_start, TurnStartEvent)
        if live is not None and session_id is not None:
            recovered = recover_reply(
                events,
                live,
                session_id=session_id,
                turn_start=start,
                turn=turn_start.data.turn,
                first_seq=len(events) + len(repairs),
                now_ms=now_ms,
            )
            if recovered is not None:
                repairs.extend(recovered)
                said.append(
                    "logged the reply a crashed process was streaming, as far as it had come "
                    f"({_recovered_size(recovered[1].data.message)}), as interrupted"
                )
        _close_turn(events, start, repairs, now_ms=now_ms)
        who = _who(crashed, imported and not any(map(_is_end_seed, events)))
        said.append(f"closed turn left open by {who} ({len(repairs)} repair events)")
    return CrashRepair(repairs, said)  # type: ignore[arg-type]


def _recovered_size(message: Message) -> str:
    """What a recovered reply holds, for the repair's warning: its answer text's characters,
    and its reasoning's when it has some (a reply cut while it was still reasoning holds no
    answer text, yet its reasoning was recovered)."""
    text = len(message.text())
    reasoning = sum(len(b.text) for b in message.content if type(b) is ReasoningBlock)
    if not reasoning:
        return f"{text} characters"
    if not text:
        return f"no answer text; {reasoning} characters of reasoning"
    return f"{text} characters, and {reasoning} of reasoning"


def _is_end_seed(event: Event) -> bool:
    return isinstance(event, SessionEndSeedEvent)


def _who(crashed: bool, as_imported: bool = False) -> str:
    """Who left the turn open: the imported log itself (``as_imported``: every event is the
    import's — a dsh process's first write to a seeded log is ``session/end-seed`` — so no
    process of dsh's ever ran the turn), a crashed process, or one that released its lock
    cleanly after its log refused the turn's end (a full disk, a failed write)."""
    if as_imported:
        return "the imported log: it ends inside that turn"
    if crashed:
        return "a crashed process"
    return "a process that did not crash but could not write the rest of its log (disk full?)"


def _close_turn(
    events: Sequence[Event], start: int, repairs: list[EventBase], *, now_ms: int
) -> None:
    """Add the events that close the turn whose ``turn/start`` is ``events[start]``."""
    turn_start = events[start]
    assert isinstance(turn_start, TurnStartEvent)
    turn = turn_start.data.turn
    scanned = scan_open_turn(events[start:])
    open_step = scanned.open_step

    def seq() -> int:
        return len(events) + len(repairs)

    for asked in scanned.unanswered:
        call_id, name, step, call = asked.call_id, asked.name, asked.step, asked.started
        code = TOOL_OUTCOME_UNKNOWN if call is not None else TOOL_NOT_STARTED
        text = (
            f"[{code}] the process ended while this tool call was running; its outcome is unknown"
            if call is not None
            else f"[{code}] the process ended before this tool call was started"
        )
        message = Message(
            id=f"repair-{call_id}",
            role="tool",
            content=(
                ToolResultBlock(
                    tool_call_id=call_id, content=(TextBlock(text=text),), is_error=True
                ),
            ),
            source=ToolSource(call_id=call_id),
        )
        repairs.append(
            ToolResultEvent(
                seq=seq(),
                time=now_ms,
                data=ToolResult(
                    turn=turn, step=step, message=message, error=ToolErrorInfo(name=name, code=code)
                ),
                surface_op=APPEND,
                source_event_seqs=(call.seq,) if call is not None else None,
            )
        )
    if open_step is not None:
        repairs.append(
            StepEndEvent(seq=seq(), time=now_ms, data=StepEnd(turn=turn, step=open_step))
        )
    repairs.append(
        TurnEndEvent(
            seq=seq(),
            time=now_ms,
            data=TurnEnd(
                turn=turn,
                reason=TurnEndReason(
                    kind="interrupted", error="the process ended before the turn finished"
                ),
            ),
        )
    )
