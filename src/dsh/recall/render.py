"""Rendering a checkpoint's shadowed span as transcript messages (docs/compaction.md,
"The two recall tools").

Each shadowed surface node becomes one string: ``User: …``, ``Assistant: …`` (tool calls as
``[tool call: name(args)]``), ``Tool result: …`` — the shared ``render_message``. A node that is
itself a checkpoint is rendered with a label (``[prior state checkpoint]`` or
``[index checkpoint]``) followed by its text, footer included: that footer names the older
checkpoint to read next (the two-hop chain).

A rendered span depends only on log events at seqs below its summary, and the log is
append-only, so spans are cached by summary seq without changing any result.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from dsh.events import (
    CheckpointKind,
    CompactionPruneEvent,
    CompactionSummaryEvent,
    Event,
    ReplaceOp,
    ToolResultEvent,
    is_checkpoint_event,
    is_surface_event,
    surface_message,
)
from dsh.recall.checkpoints import Checkpoint, ConversationSpans
from dsh.recall.parts import split_parts
from dsh.recall.span_file import SpanFile, StoredSpan, encode_text
from dsh.recall.word_file import WordFile
from dsh.recall.word_index import WordIndex
from dsh.surface import summary_of_node
from dsh.transcript import render_message

PRIOR_STATE_LABEL = "[prior state checkpoint]"
INDEX_LABEL = "[index checkpoint]"


def checkpoint_label(kind: CheckpointKind | None) -> str:
    """The label of a nested checkpoint: index, or state (also for a legacy kind-less one)."""
    return INDEX_LABEL if kind == "index" else PRIOR_STATE_LABEL


def pruned_original(events: Sequence[Event], seq: int) -> int | None:
    """The seq of the tool result that the node at ``seq`` replaced by its head and tail (a
    pruned copy: a one-node replace of an earlier tool result, sourced from a
    ``compaction/prune`` — or, as the TypeScript harness logs it, sourced from the original
    alone, right after the ``compaction/prune`` of that original); None otherwise. The replaced
    node is the one the surface projection checked when it applied the replace, so the chain
    only goes back in the log."""
    event = events[seq]
    if not isinstance(event, ToolResultEvent) or not isinstance(event.surface_op, ReplaceOp):
        return None
    original = event.surface_op.start
    valid = original == event.surface_op.end and 0 <= original < seq
    if valid and isinstance(events[original], ToolResultEvent):
        sources = event.source_event_seqs or ()
        prune = events[sources[0]] if sources and 0 <= sources[0] < seq else None
        if isinstance(prune, CompactionPruneEvent) or _pruned_just_before(events, seq, original):
            return original
    return None


def _pruned_just_before(events: Sequence[Event], seq: int, original: int) -> bool:
    """Whether the run of prunes and pruned copies right before ``seq`` holds the
    ``compaction/prune`` of ``original`` (upstream prunes, then writes the copy)."""
    run = itertools.takewhile(_prune_or_copy, (events[at] for at in range(seq - 1, original, -1)))
    return any(
        isinstance(e, CompactionPruneEvent) and e.data.shadowed_seqs == (original,) for e in run
    )


def _prune_or_copy(event: Event) -> bool:
    return isinstance(event, CompactionPruneEvent) or (
        isinstance(event, ToolResultEvent) and isinstance(event.surface_op, ReplaceOp)
    )


def render_node(events: Sequence[Event], seq: int) -> str | None:
    """One shadowed node as transcript text; None if it contributes no message. A pruned tool
    result renders as the original it was cut from: recall gives back what pruning took off the
    surface (in parts when it is long, see ``split_parts``)."""
    original = pruned_original(events, seq)
    if original is not None:
        return render_node(events, original)
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


def render_parts(events: Sequence[Event], seq: int) -> tuple[str, ...]:
    """The messages one shadowed node renders to: none, one, or the parts of a long one."""
    text = render_node(events, seq)
    return () if text is None else split_parts(text)


def render_span(events: Sequence[Event], checkpoint: Checkpoint) -> tuple[str, ...]:
    """The shadowed span of ``checkpoint``, one string per message, in surface order."""
    return _render_span(events, checkpoint)[1]


def _render_span(
    events: Sequence[Event], checkpoint: Checkpoint
) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The span's messages and the node seq each one was rendered from (a long node's parts
    each name it)."""
    kept = [(seq, part) for seq in checkpoint.shadowed_seqs for part in render_parts(events, seq)]
    return tuple(seq for seq, _ in kept), tuple(text for _, text in kept)


class SpanCache:
    """Rendered spans by summary seq, each with its lower-cased text once a search asked for it
    and its word index once a search looked for words (least recently used dropped beyond
    ``max_spans`` spans or ``max_chars`` characters in all, rendered and lower-cased text
    counted alike and an index as ``WordIndex.size``, whichever comes first).

    An entry also holds the summary event it was rendered for and is reused only for that very
    event, so a cache shared across sessions never serves another log's span. With a span file
    (:meth:`use_file`, one per session) the lower-cased text of a span is read from the file
    when an earlier process stored it, and stored there when it is first computed here (queued,
    and written by :meth:`flush`, which ``search_history`` calls once per search).
    """

    def __init__(self, max_spans: int = 100_000, max_chars: int = 256_000_000) -> None:
        self.max_spans = max_spans
        self.max_chars = max_chars
        self._chars = 0
        self._spans: OrderedDict[int, _Entry] = OrderedDict()
        self._file: SpanFile | None = None
        self._word_file: WordFile | None = None
        self.conversation = ConversationSpans()
        """The conversation span behind each checkpoint a read named (``history_read``'s
        header): a rollup heading every older stub is walked once, not on every read."""
        self.lock = threading.Lock()
        """Not thread-safe itself: a search or read in a worker thread holds this for its whole
        run (the recall tools do), so two at once, sharing the cache, take turns."""

    def __len__(self) -> int:
        return len(self._spans)

    def use_file(self, path: Path | None) -> None:
        """Keep lower-cased spans in the span file at ``path`` and word indexes in the word
        file beside it (``<id>.words``, ``dsh.recall.word_file``); None: in memory only."""
        self.flush()
        if path is None:
            self._file, self._word_file = None, None
        elif self._file is None or self._file.path != path:
            self._file, self._word_file = SpanFile(path), WordFile(path.with_suffix(".words"))

    def flush(self) -> None:
        """Write the spans lower-cased and the word indexes built since the last flush to their
        files (one write each)."""
        if self._file is not None:
            self._file.flush()
        if self._word_file is not None:
            self._word_file.flush()

    def span(self, events: Sequence[Event], checkpoint: Checkpoint) -> tuple[str, ...]:
        """``render_span(events, checkpoint)``, rendered at most once per summary event."""
        entry = self._entry(events, checkpoint)
        if entry.messages is None:
            entry.nodes, entry.messages = _render_span(events, checkpoint)
            self._grew(_size(entry.messages))
        return entry.messages

    def lowered(self, events: Sequence[Event], checkpoint: Checkpoint) -> tuple[str, ...]:
        """``tuple(m.lower() for m in span(...))``, lower-cased at most once per entry (and,
        with a span file, at most once per summary event across processes)."""
        entry = self._entry(events, checkpoint)
        if entry.lowered is None:
            stored = self._stored(entry, checkpoint)
            if stored is not None:
                entry.lowered = stored.lowered()
            else:
                messages = self.span(events, checkpoint)
                entry.lowered = tuple(m.lower() for m in messages)
                if self._file is not None:
                    self._file.put(checkpoint.summary, entry.nodes or (), entry.lowered)
            self._grew(_size(entry.lowered))
        return entry.lowered

    def words(self, events: Sequence[Event], checkpoint: Checkpoint) -> WordIndex:
        """The word index of the span's lower-cased text (``dsh.recall.word_index``), built at
        most once per entry (and, with a word file, at most once per summary event across
        processes) and counted against the budget with it."""
        entry = self._entry(events, checkpoint)
        if entry.words is None:
            stored = self._word_file.get(checkpoint.summary) if self._word_file else None
            index = stored or WordIndex.build(self.lowered(events, checkpoint))
            if stored is None and self._word_file is not None:
                self._word_file.put(checkpoint.summary, index)
            entry.words = index  # the newest entry: a cache keeps it whatever it drops
            self._grew(index.size())
        return entry.words

    def lowered_message(self, events: Sequence[Event], checkpoint: Checkpoint, index: int) -> str:
        """Message ``index`` of :meth:`lowered`, without lower-casing the span when it is not
        here yet (from the span file, or the one node rendered again)."""
        entry = self._entry(events, checkpoint)
        if entry.lowered is not None:
            return entry.lowered[index]
        stored = self._stored(entry, checkpoint)
        if stored is not None:
            return stored.message(index)
        return self.message(events, checkpoint, index).lower()

    def matches(
        self, events: Sequence[Event], checkpoint: Checkpoint, needle: str
    ) -> list[tuple[int, int]]:
        """(message index, position) of the first match of ``needle`` (lower-cased) in the
        lower-cased text of every message of the span that has one: what ``lower.find(needle)``
        over :meth:`lowered` gives, found in place in the span file when it has the span."""
        entry = self._entry(events, checkpoint)
        if entry.lowered is None:
            stored = self._stored(entry, checkpoint)
            if stored is not None:
                return stored.find(encode_text(needle))
        found = []
        for index, lower in enumerate(self.lowered(events, checkpoint)):
            position = lower.find(needle)
            if position >= 0:
                found.append((index, position))
        return found

    def copies(self, events: Sequence[Event], checkpoint: Checkpoint) -> frozenset[int]:
        """The messages of the span that are a checkpoint's text (a prior state or an index
        stub, shown with its label) rather than original messages: a copy, in a summary's or
        stub's words, of what that checkpoint shadows. Found once per entry."""
        entry = self._entry(events, checkpoint)
        if entry.copies is None:
            if entry.nodes is None and self._stored(entry, checkpoint) is None:
                self.span(events, checkpoint)
            nodes = entry.nodes or ()
            entry.copies = frozenset(
                index for index, seq in enumerate(nodes) if is_checkpoint_event(events[seq])
            )
        return entry.copies

    def message(self, events: Sequence[Event], checkpoint: Checkpoint, index: int) -> str:
        """Message ``index`` of the span: from the rendered span when it is here, else the one
        node rendered again (a hit found in the span file)."""
        entry = self._entry(events, checkpoint)
        if entry.messages is not None or entry.nodes is None:
            return self.span(events, checkpoint)[index]
        nodes = entry.nodes
        first = index  # a node's parts are consecutive: the part is the place in that run
        while first > 0 and nodes[first - 1] == nodes[index]:
            first -= 1
        return render_parts(events, nodes[index])[index - first]

    def _stored(self, entry: _Entry, checkpoint: Checkpoint) -> StoredSpan | None:
        """The span file's record of ``checkpoint`` (its node seqs noted in ``entry``)."""
        stored = self._file.get(checkpoint.summary) if self._file is not None else None
        if stored is not None and entry.nodes is None:
            entry.nodes = stored.nodes
        return stored

    def _entry(self, events: Sequence[Event], checkpoint: Checkpoint) -> _Entry:
        key = checkpoint.seq
        entry = self._spans.get(key)
        if entry is not None and entry.summary is checkpoint.summary:
            self._spans.move_to_end(key)
            return entry
        if entry is not None:
            self._chars -= entry.size()
        fresh = _Entry(checkpoint.summary)
        self._spans[key] = fresh
        self._spans.move_to_end(key)
        return fresh

    def _grew(self, chars: int) -> None:
        self._chars += chars
        self._evict()

    def _evict(self) -> None:
        while len(self._spans) > 1 and (
            len(self._spans) > self.max_spans or self._chars > self.max_chars
        ):
            _, dropped = self._spans.popitem(last=False)
            self._chars -= dropped.size()


class _Entry:
    __slots__ = ("copies", "lowered", "messages", "nodes", "summary", "words")

    def __init__(self, summary: CompactionSummaryEvent) -> None:
        self.summary = summary
        self.messages: tuple[str, ...] | None = None
        self.lowered: tuple[str, ...] | None = None
        self.nodes: tuple[int, ...] | None = None
        self.words: WordIndex | None = None
        self.copies: frozenset[int] | None = None

    def size(self) -> int:
        texts = sum(_size(part) for part in (self.messages, self.lowered) if part is not None)
        return texts + (self.words.size() if self.words is not None else 0)


def _size(messages: tuple[str, ...]) -> int:
    return sum(len(m) for m in messages)
