"""The human projection: original messages in log order, one marker per landed pass.

People see every append-origin surface event, and a note for each turn that did not complete,
each automatic compaction pass that did not finish (``unfinished_pass_note``) and each
command's answer (``command/done``); a reply's note of what cut it short and of the
calls written in its text that were not run goes with it (``MessageItem``). A ``tool/call`` is
shown as a card iff its callId is among the calls of the latest append-origin assistant message
(the reply that issued it), so the cards of steps that compaction shadowed stay paired; a
result joins the nearest earlier card of its callId that has no result yet
(``ToolResultItem.card_seq``), so replies that all number their calls from ``call_0`` keep
their own results (docs/architecture.md, "Tool-call pairing"). A checkpoint never shows its
payload: a landed pass shows one marker at the log position of its first checkpoint, with
details taken from the pass's ``compaction/summary`` events. Other replacements (a pruned
result, a regenerated message, another plugin's replace) show nothing (docs/architecture.md,
"The human transcript").

Classification uses the events' own marks (``surfaceOp``, the checkpoint source), never a fold,
and ``TranscriptProjector.feed`` is the only code path to items: live consumption (events one by
one) and replay (a stored log) produce the same items. The plain text of a whole log
(:func:`dsh.transcript.text.transcript_blocks`) skips the items but shares the rules
(``PassMarks``, ``turn_end_note``, ``surface_message``); a property test holds it equal to
rendering the items.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dsh.errors import error_line
from dsh.events import (
    AssistantMessageEvent,
    CommandDoneEvent,
    CompactionEnd,
    CompactionEndEvent,
    CompactionStart,
    CompactionStartEvent,
    CompactionSummaryEvent,
    Event,
    Message,
    OpenCalls,
    ToolCallEvent,
    ToolResultBlock,
    ToolResultEvent,
    TurnEndEvent,
    TurnEndReason,
    UserMessageEvent,
    is_checkpoint_event,
    surface_message,
    unfinished_pass_note,
)
from dsh.events.codec import gc_paused
from dsh.transcript.call_fold import CallFold, OverLimitItem


@dataclass(frozen=True, slots=True)
class MessageItem:
    """A person's prompt or an assistant message (its tool calls come as ToolCallItems)."""

    seq: int
    message: Message
    cut_by: str | None = None
    """The error code of the provider failure that cut this assistant message short."""
    not_run: tuple[str, ...] = ()
    """The tool calls this assistant message wrote in its text that were not run (their tool
    names: ``textCallsNotRun``), said under it (``dsh.transcript.render.not_run_note``)."""


@dataclass(frozen=True, slots=True)
class ToolCallItem:
    seq: int
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolResultItem:
    seq: int
    call_id: str
    text: str
    is_error: bool
    diff: tuple[str, ...] | None = None
    """The unified diff lines of a file edit the result logged (``meta["diff"]``)."""
    card_seq: int | None = None
    """The seq of the tool card (``ToolCallItem``) this result joins: the nearest earlier card
    of its callId without a result (``dsh.events.OpenCalls``); None when there is none, and the
    result shows as a card of its own."""


@dataclass(frozen=True, slots=True)
class MarkerItem:
    """Where a compaction pass landed (the seq of its first checkpoint)."""

    seq: int
    pass_id: str


@dataclass(frozen=True, slots=True)
class NoteItem:
    """A logged note for people: a turn that did not complete, an automatic compaction pass
    that did not finish, or a command's answer (the ``command/done`` of ``/compact``), so what
    was said live is there again after a resume."""

    seq: int
    text: str


TranscriptItem = MessageItem | ToolCallItem | ToolResultItem | MarkerItem | NoteItem | OverLimitItem


def turn_end_note(reason: TurnEndReason) -> str | None:
    """What people are told about a turn that ended ``reason`` (None: it completed). The
    reason's error is shown as ``error_line`` makes it (one line, escaped, bounded: a provider's
    or an exception's text may be long or hostile); the log keeps all of it."""
    if reason.kind == "completed":  # most turns
        return None
    error = error_line(reason.error) if reason.error else None
    if reason.kind == "aborted":
        return f"Turn stopped: {error or 'cancelled'}"
    if reason.kind == "error":
        return f"Turn failed: {error or 'unknown error'}"
    if reason.kind == "max-tokens":
        if error:  # the loop's error says what to raise
            return f"Turn stopped: {error}"
        # a log from before the loop named the option
        return "The reply was cut at the model's output limit (provider.max_output_tokens)."
    if reason.kind == "interrupted":
        return "Turn interrupted: dsh stopped before it ended."
    if reason.kind in ("max-steps", "repeated-calls"):  # a limit, not a cancel
        return f"Turn stopped: {error or LIMIT_REACHED[reason.kind]}"
    return None


LIMIT_REACHED = {
    "max-steps": "it took every step it is allowed (max_steps)",
    "repeated-calls": "the same tool call repeated too often (tools.max_repeated_calls)",
}
"""What a turn a limit stopped says when its log gives no reason."""


@dataclass(slots=True)
class PassDetails:
    """What a marker can say about its pass, from the pass's ``compaction/summary`` events."""

    summaries: list[tuple[str, str]] = field(default_factory=list)
    """(kind, summary text) per checkpoint, in commit order."""
    summary_seqs: list[int] = field(default_factory=list)
    items: int = 0
    tokens: int = 0


class PassMarks:
    """Which compaction pass each checkpoint belongs to, and which passes have shown their one
    marker: the marker rule every text of the transcript follows (the projector's items and
    :func:`dsh.transcript.text.transcript_blocks`)."""

    __slots__ = ("_failed", "_marked", "_pass_of")

    def __init__(self) -> None:
        self._pass_of: dict[str, str] = {}
        self._marked: set[str] = set()
        self._failed: set[str] = set()

    def started(self, start: CompactionStart) -> None:
        """A compaction began: its checkpoints and summaries belong to its pass."""
        self._pass_of[start.compaction_id] = start.pass_id or start.compaction_id

    def pass_of(self, compaction_id: str, default: str) -> str:
        """The pass of compaction ``compaction_id`` (``default`` if it never started)."""
        return self._pass_of.get(compaction_id, default)

    def failed(self, end: CompactionEnd) -> str | None:
        """The note of an automatic pass that did not finish, at its first failed
        ``compaction/end``; None for an end without error, a later one of a pass already
        noted, or a manual pass's (no ``turn``: the answer of its ``/compact``, a
        ``command/done``, says it)."""
        if end.error is None or end.turn is None:
            return None
        pass_id = end.pass_id or self._pass_of.get(end.compaction_id, end.compaction_id)
        if pass_id in self._failed:
            return None
        self._failed.add(pass_id)
        return unfinished_pass_note(end.error)

    def first_checkpoint(self, event: UserMessageEvent) -> str | None:
        """The pass of checkpoint ``event`` if it is the first of its pass (its marker shows
        here), else None."""
        compaction_id = getattr(event.data.source, "compaction_id", None) or f"#{event.seq}"
        pass_id = self._pass_of.get(compaction_id, compaction_id)
        if pass_id in self._marked:
            return None
        self._marked.add(pass_id)
        return pass_id


class TranscriptProjector:
    """Feeds events in log order; returns the transcript items each one adds.

    ``feed`` dispatches on the event's exact type (event classes are leaves), one dict lookup
    per event: most events of a long log (step and turn brackets, requests) add nothing."""

    def __init__(self) -> None:
        self._passes = PassMarks()
        self._reply_calls: frozenset[str] = frozenset()
        """The callIds of the latest append-origin assistant message: its tool/calls show."""
        self._cards: OpenCalls[int] = OpenCalls()
        """The seqs of the cards that have no result yet, by callId."""
        self._fold = CallFold()
        """The latest reply's calls past ``tools.max_calls_per_reply``: one item for all."""
        self.details: dict[str, PassDetails] = {}
        self._handlers: dict[type, Callable[[Any], list[TranscriptItem]]] = {
            CompactionStartEvent: self._compaction_start,
            CompactionEndEvent: self._compaction_end,
            CompactionSummaryEvent: self._compaction_summary,
            UserMessageEvent: self._user_message,
            AssistantMessageEvent: self._assistant_message,
            ToolResultEvent: self._tool_result,
            ToolCallEvent: self._tool_call,
            TurnEndEvent: self._turn_end,
            CommandDoneEvent: self._command_done,
        }

    def feed(self, event: Event) -> list[TranscriptItem]:
        """The items ``event`` adds to the transcript (often none)."""
        handler = self._handlers.get(type(event))
        return [] if handler is None else handler(event)

    def _compaction_start(self, event: CompactionStartEvent) -> list[TranscriptItem]:
        self._passes.started(event.data)
        return []

    def _compaction_end(self, event: CompactionEndEvent) -> list[TranscriptItem]:
        note = self._passes.failed(event.data)
        return [] if note is None else [NoteItem(event.seq, note)]

    def _compaction_summary(self, event: CompactionSummaryEvent) -> list[TranscriptItem]:
        summary = event.data
        pass_id = self._passes.pass_of(
            summary.compaction_id, summary.pass_id or summary.compaction_id
        )
        details = self.details.setdefault(pass_id, PassDetails())
        details.summaries.append((summary.kind or "state", summary.summary))
        details.summary_seqs.append(event.seq)
        details.items += len(summary.shadowed_seqs)
        details.tokens += summary.shadowed_token_count
        return []

    def _user_message(self, event: UserMessageEvent) -> list[TranscriptItem]:
        if event.surface_op == "append":
            return [MessageItem(event.seq, event.data)]
        if not is_checkpoint_event(event):
            return []  # another replacement: shows nothing
        pass_id = self._passes.first_checkpoint(event)
        return [] if pass_id is None else [MarkerItem(event.seq, pass_id)]

    def _assistant_message(self, event: AssistantMessageEvent) -> list[TranscriptItem]:
        if event.surface_op != "append":
            return []
        calls = event.data.message.tool_calls()
        self._reply_calls = frozenset(call.id for call in calls)
        self._fold.reply(calls)
        message = surface_message(event)  # None for an empty message, as on the surface
        if message is None:
            return []
        data = event.data
        return [MessageItem(event.seq, message, data.error_code, data.text_calls_not_run)]

    def _tool_result(self, event: ToolResultEvent) -> list[TranscriptItem]:
        if event.surface_op != "append":
            return []
        block = event.data.message.content[0]
        assert isinstance(block, ToolResultBlock)
        text = "".join([part.text for part in block.content])
        diff = logged_diff(event.data.meta)
        call_id = block.tool_call_id
        if self._fold.result(call_id):
            return []  # its call's fold says it was not run
        card = self._cards.answer(call_id)
        return [ToolResultItem(event.seq, call_id, text, block.is_error, diff, card)]

    def _tool_call(self, event: ToolCallEvent) -> list[TranscriptItem]:
        data = event.data
        if data.call_id not in self._reply_calls:
            return []
        folded, fold = self._fold.call(event.seq, data)
        if folded:
            return [] if fold is None else [fold]
        self._cards.open(data.call_id, event.seq)
        return [ToolCallItem(event.seq, data.call_id, data.name, data.arguments)]

    def _turn_end(self, event: TurnEndEvent) -> list[TranscriptItem]:
        note = turn_end_note(event.data.reason)
        return [NoteItem(event.seq, note)] if note is not None else []

    def _command_done(self, event: CommandDoneEvent) -> list[TranscriptItem]:
        return [NoteItem(event.seq, event.data.text)]


def logged_diff(meta: dict[str, Any] | None) -> tuple[str, ...] | None:
    """A tool result's ``meta["diff"]`` when it is a list of lines (``dsh.tools.diffs``), else
    None: what a card shows, and what ``dsh undo`` takes back."""
    lines = meta.get("diff") if meta is not None else None
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        return None
    return tuple(lines)


def transcript_tool_call_ids(events: Iterable[Event]) -> set[str]:
    """callIds of the tool calls people see: those in append-origin assistant messages."""
    ids: set[str] = set()
    for event in events:
        if isinstance(event, AssistantMessageEvent) and event.surface_op == "append":
            ids.update(call.id for call in event.data.message.tool_calls())
    return ids


def transcript_items(events: Iterable[Event]) -> Iterator[TranscriptItem]:
    """Replay: the items of a stored log, through the same projector live views use."""
    projector = TranscriptProjector()
    for event in events:
        yield from projector.feed(event)


def project(events: Iterable[Event]) -> tuple[list[TranscriptItem], dict[str, PassDetails]]:
    """All items of a log and the details of every landed pass."""
    projector = TranscriptProjector()
    with gc_paused():  # many small acyclic objects: a collection pass would find nothing
        items = [item for event in events for item in projector.feed(event)]
    return items, projector.details
