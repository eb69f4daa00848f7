"""The human projection (spec §6): original messages in log order, one marker per landed pass.

People see every append-origin surface event, and a note for each turn that did not complete
and each command's answer (``command/done``). A ``tool/call`` is shown (as a card that its
result joins) iff its callId appears in an append-origin assistant message, so the cards of
steps that compaction shadowed stay paired. A checkpoint never shows its payload: a landed pass
shows one marker at the log position of its first checkpoint, with details taken from the pass's
``compaction/summary`` events. Other replacements (a pruned result, a regenerated message,
another plugin's replace) show nothing.

Classification uses the events' own marks (``surfaceOp``, the checkpoint source), never a fold,
and ``TranscriptProjector.feed`` is the only code path: live consumption (events one by one) and
replay (a stored log) produce the same items.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from dsh.events import (
    AssistantMessageEvent,
    CommandDoneEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    Event,
    Message,
    ToolCallEvent,
    ToolResultBlock,
    ToolResultEvent,
    TurnEndEvent,
    TurnEndReason,
    is_append_surface_event,
    is_checkpoint_event,
    surface_message,
)
from dsh.events.codec import gc_paused


@dataclass(frozen=True, slots=True)
class MessageItem:
    """A person's prompt or an assistant message (its tool calls come as ToolCallItems)."""

    seq: int
    message: Message
    cut_by: str | None = None
    """The error code of the provider failure that cut this assistant message short."""


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


@dataclass(frozen=True, slots=True)
class MarkerItem:
    """Where a compaction pass landed (the seq of its first checkpoint)."""

    seq: int
    pass_id: str


@dataclass(frozen=True, slots=True)
class NoteItem:
    """A logged note for people: a turn that did not complete, or a command's answer (the
    ``command/done`` of ``/compact``), so what was said live is there again after a resume."""

    seq: int
    text: str


TranscriptItem = MessageItem | ToolCallItem | ToolResultItem | MarkerItem | NoteItem


def turn_end_note(reason: TurnEndReason) -> str | None:
    """What people are told about a turn that ended ``reason`` (None: it completed)."""
    if reason.kind == "aborted":
        return f"Turn stopped: {reason.error or 'cancelled'}"
    if reason.kind == "error":
        return f"Turn failed: {reason.error or 'unknown error'}"
    if reason.kind == "max-tokens":
        return "The reply was cut at the model's output limit."
    if reason.kind == "interrupted":
        return "Turn interrupted: dsh stopped before it ended."
    return None


@dataclass(slots=True)
class PassDetails:
    """What a marker can say about its pass, from the pass's ``compaction/summary`` events."""

    summaries: list[tuple[str, str]] = field(default_factory=list)
    """(kind, summary text) per checkpoint, in commit order."""
    summary_seqs: list[int] = field(default_factory=list)
    items: int = 0
    tokens: int = 0


class TranscriptProjector:
    """Feeds events in log order; returns the transcript items each one adds."""

    def __init__(self) -> None:
        self._pass_of: dict[str, str] = {}
        self._marked: set[str] = set()
        self._shown_calls: set[str] = set()
        self.details: dict[str, PassDetails] = {}

    def feed(self, event: Event) -> list[TranscriptItem]:
        if isinstance(event, CompactionStartEvent):
            start = event.data
            self._pass_of[start.compaction_id] = start.pass_id or start.compaction_id
        elif isinstance(event, CompactionSummaryEvent):
            summary = event.data
            pass_id = self._pass_of.get(
                summary.compaction_id, summary.pass_id or summary.compaction_id
            )
            details = self.details.setdefault(pass_id, PassDetails())
            details.summaries.append((summary.kind or "state", summary.summary))
            details.summary_seqs.append(event.seq)
            details.items += len(summary.shadowed_seqs)
            details.tokens += summary.shadowed_token_count
        elif is_checkpoint_event(event):
            compaction_id = getattr(event.data.source, "compaction_id", None) or f"#{event.seq}"
            pass_id = self._pass_of.get(compaction_id, compaction_id)
            if pass_id not in self._marked:
                self._marked.add(pass_id)
                return [MarkerItem(event.seq, pass_id)]
        elif isinstance(event, ToolCallEvent):
            if event.data.call_id in self._shown_calls:
                data = event.data
                return [ToolCallItem(event.seq, data.call_id, data.name, data.arguments)]
        elif is_append_surface_event(event):
            return self._surface(event)
        elif isinstance(event, TurnEndEvent):
            note = turn_end_note(event.data.reason)
            return [NoteItem(event.seq, note)] if note is not None else []
        elif isinstance(event, CommandDoneEvent):
            return [NoteItem(event.seq, event.data.text)]
        return []

    def _surface(self, event: Event) -> list[TranscriptItem]:
        if isinstance(event, ToolResultEvent):
            block = event.data.message.content[0]
            assert isinstance(block, ToolResultBlock)
            text = "".join(part.text for part in block.content)
            return [ToolResultItem(event.seq, block.tool_call_id, text, block.is_error)]
        cut_by = None
        if isinstance(event, AssistantMessageEvent):
            self._shown_calls.update(c.id for c in event.data.message.tool_calls())
            cut_by = event.data.error_code
        message = surface_message(event)  # type: ignore[arg-type]
        return [MessageItem(event.seq, message, cut_by)] if message is not None else []


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
