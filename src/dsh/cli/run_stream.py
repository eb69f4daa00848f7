"""``dsh run --json-stream``: a turn followed live, as JSON lines (docs/usage.md, "Following a
turn live: --json-stream").

One JSON object per line, written and flushed as it happens: the session, each turn's start
(its prompt), the answer's text as it streams (``text_delta``, coalesced: ``dsh.cli.
coalesced_text``), each reply, tool call, approval refusal and tool result, each compaction pass
(its start and end, with figures), every warning and error line the command prints on stderr
(``dsh.cli.warning_lines.tapped``), and each turn's end with its final answer (a reply a
failure or a signal cut short: its text so far, marked ``partial``), usage and estimated cost.
Text that may yet prove to be reasoning (a lone ``</think>`` may close it) is streamed by the
rule ``dsh.cli.held_text`` states: held back for a model known to write one; streamed at once
otherwise, and if it proves to be reasoning a ``text_was_reasoning`` line says that the step's
``text_delta`` lines so far were its reasoning. Every line has ``v`` (``VERSION``: the schema's
version, raised only when a field is removed or changes meaning; new fields and types may appear
within a version), ``type`` and ``session``.

What comes from the log is shown as the log has it; a tool call's arguments are masked besides,
with the tools' own ``SecretPolicy`` (the one that masks every tool output and a ``!cmd`` line
before they are logged), so a key the model was given and put in a ``bash`` command does not
reach the reader of the stream. A tool result's text is already masked (``dsh.tools.registry``).

The lines are made on the thread that runs the turn (the session's events and the stream's
deltas arrive there). A warning logged on another thread waits in a queue for that thread: it is
written with the next line, or as soon as the event loop gets to it (it is woken for it).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dsh.agent.billing import Bill, BilledTokens
from dsh.agent.loggable import loggable_value
from dsh.cli.coalesced_text import CoalescedText, Schedule, on_running_loop
from dsh.cli.held_text import HeldText
from dsh.events import (
    AssistantMessageEvent,
    CompactionEndEvent,
    CompactionPlanEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    Event,
    SessionEndSeedEvent,
    StepStartEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
)
from dsh.llm.types import StreamEvent
from dsh.store.live_file import CALL_ENDS
from dsh.surface import Session
from dsh.tools.approval import for_a_person
from dsh.tools.secrets import SecretPolicy
from dsh.tools.terminal_text import terminal_json

VERSION = 1
"""The schema's version: every line's ``v``."""

PREVIEW_CHARS = 500
"""A tool result's ``preview``: its text's first characters (``chars`` says how many it has)."""


@dataclass(slots=True)
class _Pass:
    """A compaction pass under way: its figures so far."""

    pass_id: str
    turn: int | None
    context_before: int
    regions: int | None = None
    committed: int = 0
    summaries: int = 0
    summarized_tokens: int = 0


class RunStream:
    """Writes a run's lines (module docstring) through ``write_line``, which writes one line to
    stdout and flushes it (``dsh run``'s output: a closed pipe cancels the turn there)."""

    def __init__(self, write_line: Callable[[str], None], *, schedule: Schedule = on_running_loop):
        self._write_line = write_line
        self._session: Session | None = None
        self._secrets = SecretPolicy()
        self._text = CoalescedText(self._text_delta, schedule=schedule)
        self.held = HeldText()
        """Text that may be reasoning, held back (``dsh.cli.held_text``; ``dsh run`` gives it
        the endpoint's memory)."""
        self._started = False
        self._held: list[tuple[str, str]] = []
        """Lines of stderr told before the stream started (written after its first line)."""
        self._queued: collections.deque[tuple[str, str]] = collections.deque()
        """Lines of stderr told on another thread, for the turn's thread to write."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._owner = threading.main_thread()
        self.prompt = ""
        """The prompt of the turn about to start (``dsh run`` sets it before each turn)."""
        self._turn: int | None = None
        self._step: int | None = None
        self._billed = BilledTokens()
        self._pass: _Pass | None = None
        self._names: dict[str, str] = {}
        """The tool each call id of this turn named (the latest ``tool/call`` of that id)."""

    # ---- what dsh run calls -----------------------------------------------------------------

    def start(self, session: Session, secrets: SecretPolicy, *, resumed: bool) -> None:
        """The first line (the session), then the warnings told before it; ``secrets``: the
        tools' policy, which masks the calls' arguments."""
        self._session, self._secrets, self._started = session, secrets, True
        self._line("session", resumed=resumed)
        held, self._held = self._held, []
        for level, text in held:
            self._line(level, message=text)

    def told(self, level: str, text: str) -> None:
        """A line printed on stderr (``dsh.cli.warning_lines.tapped``): a ``warning`` or an
        ``error`` line of the stream."""
        if threading.current_thread() is not self._owner:
            self._queued.append((level, text))
            loop = self._loop
            if loop is not None:
                with contextlib.suppress(RuntimeError):  # closed: the next line writes it
                    loop.call_soon_threadsafe(self._drain)
            return
        if not self._started:
            self._held.append((level, text))
            return
        self._drain()
        self._text.flush()
        self._line(level, message=text)

    def on_stream(self, event: StreamEvent) -> None:
        """The model's stream: its text, as ``text_delta`` lines."""
        self._loop = asyncio.get_running_loop()
        self._drain()
        shown = self.held.feed(event)
        if shown.text:
            self._text.add(shown.text)
        if shown.retracted:
            self._text.flush()
            self._line("text_was_reasoning", turn=self._turn, step=self._step)

    def on_event(self, event: Event) -> None:
        """One event logged: its line, if it has one."""
        self._drain()
        if isinstance(event, CALL_ENDS):  # a reply cut short: the text held is its answer
            self._text.add(self.held.release())
        self._text.flush()
        self._billed.feed(event)
        self._follow_compaction(event)
        if isinstance(event, TurnStartEvent):
            self._turn, self._step = event.data.turn, None
            self._billed, self._names = BilledTokens(), {}
            self._line("turn_start", turn=event.data.turn, prompt=self.prompt)
        elif isinstance(event, StepStartEvent):
            self._step = event.data.step
        elif isinstance(event, AssistantMessageEvent) and event.surface_op == "append":
            self._reply(event)
        elif isinstance(event, ToolCallEvent):
            data = event.data
            self._names[data.call_id] = data.name
            self._line(
                "tool_call",
                turn=data.turn,
                step=data.step,
                callId=data.call_id,
                name=data.name,
                arguments=self._secrets.mask(data.arguments),
                fromText=data.from_text,
            )
        elif isinstance(event, ToolResultEvent) and event.surface_op == "append":
            self._tool_result(event)

    def turn_end(
        self, turn: int, reason: str, text: str, error: str | None, *, partial: bool = False
    ) -> None:
        """The turn's last line: how it ended, its final answer (``partial``: a reply a failure
        or a cancel cut short, ``dsh.cli.turn_answer``), what its model calls used and their
        cost at list prices (``dsh.agent.billing``)."""
        self._drain()
        self._text.flush()
        bills = self._billed.report().bills
        priced = [bill.cost for bill in bills if bill.cost is not None]
        self._line(
            "turn_end",
            turn=turn,
            reason=reason,
            error=error,
            text=text,
            partial=partial,
            usage=_billed(bill for bill in bills if bill.role == "conversation"),
            summarizerUsage=_billed(bill for bill in bills if bill.role == "summaries"),
            costUsd=round(sum(priced), 6) if priced else None,
            unpriced=[f"{bill.provider}:{bill.model}" for bill in bills if bill.price is None],
        )

    def close(self) -> None:
        """Write what still waits (a warning another thread logged, text not yet written)."""
        self._drain()
        self._text.flush()

    # ---- lines ------------------------------------------------------------------------------

    def _line(self, kind: str, **fields: Any) -> None:
        assert self._session is not None
        body = {"v": VERSION, "type": kind, "session": self._session.id, **fields}
        line = json.dumps(loggable_value(body), ensure_ascii=False, separators=(",", ":"))
        self._write_line(terminal_json(line))  # a C1 control as its escape, as C0 ones are

    def _drain(self) -> None:
        """Write the lines other threads told (on the turn's thread, in their order)."""
        while self._queued:
            level, text = self._queued.popleft()
            self.told(level, text)

    def _text_delta(self, text: str) -> None:
        self._line("text_delta", turn=self._turn, step=self._step, text=text)

    def _reply(self, event: AssistantMessageEvent) -> None:
        data = event.data
        message = data.message
        self._line(
            "reply",
            turn=data.turn,
            step=data.step,
            text=data.recovered_from_text
            if data.recovered_from_text is not None
            else message.text(),
            toolCalls=len(message.tool_calls()),
            interrupted=data.interrupted,
            errorCode=data.error_code,
            textCallsNotRun=list(data.text_calls_not_run),
            usage=_usage(data.usage),
        )

    def _tool_result(self, event: ToolResultEvent) -> None:
        data = event.data
        block = data.message.content[0]
        call_id = getattr(block, "tool_call_id", "")
        text = "".join(getattr(b, "text", "") for b in getattr(block, "content", ()))
        name = data.error.name if data.error is not None else self._names.get(call_id)
        where = {"turn": data.turn, "step": data.step, "callId": call_id, "name": name}
        if data.error is not None and data.error.code == "DENIED":
            self._line("approval_refused", **where, message=for_a_person(text))
        self._line(
            "tool_result",
            **where,
            status="error" if data.error is not None else "ok",
            code=data.error.code if data.error is not None else None,
            preview=text[:PREVIEW_CHARS],
            chars=len(text),
        )

    # ---- compaction -------------------------------------------------------------------------

    def _follow_compaction(self, event: Event) -> None:
        """A pass starts with its first ``compaction/start``, counts its summaries, learns its
        regions from ``compaction/plan`` and ends with an error, its last region's end, a
        bracket that ended before any plan, or the turn's end (as the web's progress does)."""
        current = self._pass
        if isinstance(event, CompactionStartEvent):
            pass_id = event.data.pass_id or event.data.compaction_id
            if current is not None and current.pass_id == pass_id:
                return
            if current is not None:
                self._pass_end(current, "another pass started before it ended")
            tokens = self._measure()
            self._pass = _Pass(pass_id, event.data.turn, tokens)
            self._line(
                "compaction_start", turn=event.data.turn, passId=pass_id, contextTokens=tokens
            )
        elif current is None:
            return
        elif isinstance(event, CompactionSummaryEvent):
            current.summaries += 1
            current.summarized_tokens += event.data.shadowed_token_count
        elif isinstance(event, CompactionPlanEvent) and event.data.pass_id == current.pass_id:
            current.regions = len(event.data.regions)
        elif isinstance(event, CompactionEndEvent):
            if event.data.error is not None:
                self._pass_end(current, event.data.error)
                return
            current.committed += 1
            if current.regions is None or current.committed >= current.regions:
                self._pass_end(current, None)
        elif isinstance(event, TurnEndEvent | SessionEndSeedEvent):
            self._pass_end(current, "the turn ended before the pass did")

    def _measure(self) -> int:
        """What the next request would carry, as compaction measures it."""
        assert self._session is not None
        return self._session.measure().total_tokens

    def _pass_end(self, current: _Pass, error: str | None) -> None:
        self._pass = None
        self._line(
            "compaction_end",
            turn=current.turn,
            passId=current.pass_id,
            contextTokensBefore=current.context_before,
            contextTokens=self._measure(),
            checkpoints=current.committed,
            summarizedTokens=current.summarized_tokens,
            error=error,
        )


def _usage(usage: Usage | None) -> dict[str, Any] | None:
    """A reply's usage as the provider reported it (None: it reported none)."""
    if usage is None:
        return None
    return {
        "inputTokens": usage.input_tokens,
        "cacheReadTokens": usage.cache_read_tokens or 0,
        "cacheWriteTokens": usage.cache_write_tokens or 0,
        "outputTokens": usage.output_tokens,
    }


def _billed(bills: Iterable[Bill]) -> dict[str, int]:
    """The billed tokens of ``bills`` (``dsh.agent.billing.Bill``s), summed: ``calls`` counts
    every model call, ``unreported`` those of them that sent no usage figure (their tokens are
    in no count)."""
    total = {
        "calls": 0,
        "inputTokens": 0,
        "cacheReadTokens": 0,
        "cacheWriteTokens": 0,
        "outputTokens": 0,
        "unreported": 0,
    }
    for bill in bills:
        total["calls"] += bill.calls + bill.unreported
        total["inputTokens"] += bill.uncached
        total["cacheReadTokens"] += bill.cache_read
        total["cacheWriteTokens"] += bill.cache_write
        total["outputTokens"] += bill.output
        total["unreported"] += bill.unreported
    return total
