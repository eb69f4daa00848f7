"""Rendering a checkpoint's shadowed span as transcript messages (spec §5).

Each shadowed surface node becomes one string: ``User: …``, ``Assistant: …`` (tool calls as
``[tool call: name(args)]``), ``Tool result: …`` — the shared ``render_message``. A node that is
itself a checkpoint is rendered with a label (``[prior state checkpoint]`` or
``[index checkpoint]``) followed by its text, footer included: that footer names the older
checkpoint to read next (the two-hop chain).

A rendered span depends only on log events at seqs below its summary, and the log is
append-only, so spans are cached by summary seq without changing any result.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from dsh.events import (
    CheckpointKind,
    CompactionSummaryEvent,
    Event,
    is_checkpoint_event,
    is_surface_event,
    surface_message,
)
from dsh.recall.checkpoints import Checkpoint
from dsh.surface import summary_of_node
from dsh.transcript import render_message

PRIOR_STATE_LABEL = "[prior state checkpoint]"
INDEX_LABEL = "[index checkpoint]"


def checkpoint_label(kind: CheckpointKind | None) -> str:
    """The label of a nested checkpoint: index, or state (also for a legacy kind-less one)."""
    return INDEX_LABEL if kind == "index" else PRIOR_STATE_LABEL


def render_node(events: Sequence[Event], seq: int) -> str | None:
    """One shadowed node as transcript text; None if it contributes no message."""
    event = events[seq]
    if not is_surface_event(event):
        return None
    message = surface_message(event)
    if message is None:
        return None
    if is_checkpoint_event(event):
        summary = summary_of_node(events, seq)
        kind = summary.data.kind if summary is not None else None
        return render_message(message, label=checkpoint_label(kind))
    return render_message(message)


def render_span(events: Sequence[Event], checkpoint: Checkpoint) -> tuple[str, ...]:
    """The shadowed span of ``checkpoint``, one string per message, in surface order."""
    rendered = (render_node(events, seq) for seq in checkpoint.shadowed_seqs)
    return tuple(text for text in rendered if text is not None)


class SpanCache:
    """Rendered spans by summary seq, each with its lower-cased text once a search asked for it
    (least recently used dropped beyond ``max_spans`` spans or ``max_chars`` characters in all,
    rendered and lower-cased text counted alike, whichever comes first).

    An entry also holds the summary event it was rendered for and is reused only for that very
    event, so a cache shared across sessions never serves another log's span.
    """

    def __init__(self, max_spans: int = 100_000, max_chars: int = 256_000_000) -> None:
        self.max_spans = max_spans
        self.max_chars = max_chars
        self._chars = 0
        self._spans: OrderedDict[int, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._spans)

    def span(self, events: Sequence[Event], checkpoint: Checkpoint) -> tuple[str, ...]:
        """``render_span(events, checkpoint)``, rendered at most once per summary event."""
        return self._entry(events, checkpoint).messages

    def lowered(self, events: Sequence[Event], checkpoint: Checkpoint) -> tuple[str, ...]:
        """``tuple(m.lower() for m in span(...))``, lower-cased at most once per entry."""
        entry = self._entry(events, checkpoint)
        if entry.lowered is None:
            entry.lowered = tuple(m.lower() for m in entry.messages)
            self._chars += _size(entry.lowered)
            self._evict()
        return entry.lowered

    def _entry(self, events: Sequence[Event], checkpoint: Checkpoint) -> _Entry:
        key = checkpoint.seq
        entry = self._spans.get(key)
        if entry is not None and entry.summary is checkpoint.summary:
            self._spans.move_to_end(key)
            return entry
        if entry is not None:
            self._chars -= entry.size()
        fresh = _Entry(checkpoint.summary, render_span(events, checkpoint))
        self._spans[key] = fresh
        self._spans.move_to_end(key)
        self._chars += fresh.size()
        self._evict()
        return fresh

    def _evict(self) -> None:
        while len(self._spans) > 1 and (
            len(self._spans) > self.max_spans or self._chars > self.max_chars
        ):
            _, dropped = self._spans.popitem(last=False)
            self._chars -= dropped.size()


class _Entry:
    __slots__ = ("lowered", "messages", "summary")

    def __init__(self, summary: CompactionSummaryEvent, messages: tuple[str, ...]) -> None:
        self.summary = summary
        self.messages = messages
        self.lowered: tuple[str, ...] | None = None

    def size(self) -> int:
        return _size(self.messages) + (_size(self.lowered) if self.lowered is not None else 0)


def _size(messages: tuple[str, ...]) -> int:
    return sum(len(m) for m in messages)
