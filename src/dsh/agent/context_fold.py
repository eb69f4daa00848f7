"""What ``context_report``, ``/cost`` and the web's session info read from the whole log, kept
up to date as the log grows.

A ``ContextFold`` holds one item per surface node (its part, role, price and preview), the
nodes' sums by part, the conversation calls' usage and price (``billing.ConversationCalls``),
``/cost``'s bills per provider:model (``billing.BilledTokens``) and the session's figures
(``SessionStats``: the web's session info). Its first update reads the session's per-type
index and its surface, not the whole log; later ones look only at the events appended since
(the log only grows): an append adds one item, a replace (a compaction's checkpoint, a pruned
result) makes the items again from the surface, reusing every item it still holds, since an
item depends only on its own event and the events before it. The items are made only when an
update asks for them (``/cost`` and the session info need the log's figures alone, and a
session never compacted has a node per message). So a face that keeps a fold (the TUI's
controller, a web session's handle, the web's read-only sessions) pays for what was appended
since its last report, not for the session.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dsh.events import (
    APPEND,
    AssistantMessageEvent,
    CompactionSummaryEvent,
    Event,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    is_checkpoint_event,
    is_surface_event,
    surface_message,
)
from dsh.surface import Session, summary_of_node
from dsh.transcript.stats import SessionStats, add_stats, session_stats, stats_by_type

from .billing import BilledTokens, ConversationCalls

NodePart = Literal["stubs", "state", "tail"]
NODE_PARTS: tuple[NodePart, ...] = ("stubs", "state", "tail")
PREVIEW_CHARS = 100


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One surface node of the next request."""

    seq: int
    part: NodePart
    role: str
    tokens: int
    preview: str


def context_item(session: Session, seq: int) -> ContextItem:
    """The item of surface node ``seq``: an index checkpoint is a stub, any other checkpoint
    the state, every other node the verbatim tail."""
    event = session.events[seq]
    message = surface_message(event)  # type: ignore[arg-type]
    part: NodePart = "tail"
    if is_checkpoint_event(event):
        summary = summary_of_node(session.events, seq)
        part = "stubs" if summary is not None and summary.data.kind == "index" else "state"
    role = message.role if message is not None else "assistant"
    preview = _preview(message.content) if message is not None else ""
    return ContextItem(seq, part, role, session.node_tokens(seq), preview)


def _preview(content: Sequence[Any]) -> str:
    texts: list[str] = []
    for block in content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            texts.append(f"{block.name}({block.arguments})")
        elif isinstance(block, ToolResultBlock):
            texts.extend(b.text for b in block.content if isinstance(b, TextBlock))
    flat = " ".join(" ".join(texts).split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


class ContextFold:
    """The items, part sums, calls, bills and figures of one session's log, kept
    incrementally.

    ``update(session)`` brings it up to date and returns it; a fold given another session (or
    one whose session is gone) starts over. Not thread-safe: one fold, one updater at a time.
    """

    def __init__(self) -> None:
        self._session: weakref.ref[Session] | None = None
        self._seen = 0
        self._items: list[ContextItem] = []
        self._sums: dict[NodePart, list[int]] = {part: [0, 0] for part in NODE_PARTS}
        """Per node part: [items, tokens]."""
        self._stale = False
        """A replace was folded since the items were last brought up to date."""
        self.calls = ConversationCalls()
        self.bills = BilledTokens()
        self.stats: SessionStats = session_stats(())

    @property
    def items(self) -> tuple[ContextItem, ...]:
        """The surface nodes' items, in model order, as of the last update that made them."""
        return tuple(self._items)

    def part_sums(self, part: NodePart) -> tuple[int, int]:
        """(items, tokens) of the nodes of ``part``."""
        items, tokens = self._sums[part]
        return items, tokens

    def update(self, session: Session, *, items: bool = True) -> ContextFold:
        """Bring the fold up to ``session``'s log. ``items=False`` (``/cost``, the session
        info: they need only the log's figures) leaves the surface items to the next update
        that asks for them, which then makes the items of every node added since."""
        events = session.events
        known = self._session() if self._session is not None else None
        if known is not session or len(events) < self._seen:  # another log: start over
            self._start(session)
        elif len(events) > self._seen:
            self._stale |= self._fold(events[self._seen :])
            self._seen = len(events)
        if items:
            self._sync_items(session)
        return self

    def _start(self, session: Session) -> None:
        """The state of folding the whole log, from the per-type index when it is complete:
        while a batch commits, an observer sees the batch's events in the log before the
        index has them all, and then the log is folded event by event. No items are held."""
        events = session.events
        self._session = weakref.ref(session)
        self.calls = ConversationCalls()
        self.bills = BilledTokens()
        if events and _indexed(session, events[-1]):
            self.stats = stats_by_type(len(events), session.of_type)
            for event in session.of_type(AssistantMessageEvent):
                self.calls.feed(event)
                self.bills.feed(event)
            for summary in session.of_type(CompactionSummaryEvent):
                self.bills.feed(summary)
        else:
            self.stats = session_stats(())
            self._fold(events)
        self._seen = len(events)
        self._items = []  # another log's items share its seqs, not its events
        self._sums = {part: [0, 0] for part in NODE_PARTS}
        self._stale = False

    def _sync_items(self, session: Session) -> None:
        """The items of the current surface: after appends only, the new nodes follow the
        held ones; after a replace, they are made again (reusing the held ones)."""
        nodes, held = session.nodes, len(self._items)
        if self._stale or held > len(nodes) or (held and nodes[held - 1] != self._items[-1].seq):
            self._remake(session)
        else:
            for seq in nodes[held:]:
                self._add(context_item(session, seq))
        self._stale = False

    def _fold(self, events: Sequence[Event]) -> bool:
        """Fold appended events into the calls, bills and figures; True iff one replaced
        nodes."""
        self.stats = add_stats(self.stats, session_stats(events))
        replaced = False
        feed, bill = self.calls.feed, self.bills.feed
        for event in events:
            if type(event) is AssistantMessageEvent:
                feed(event)
                bill(event)
            elif type(event) is CompactionSummaryEvent:
                bill(event)
            if is_surface_event(event) and event.surface_op != APPEND:
                replaced = True
        return replaced

    def _remake(self, session: Session) -> None:
        """The items again from the surface, each one reused when it is already held."""
        held = {item.seq: item for item in self._items}
        self._items = []
        self._sums = {part: [0, 0] for part in NODE_PARTS}
        for seq in session.nodes:
            item = held.get(seq)
            self._add(item if item is not None else context_item(session, seq))

    def _add(self, item: ContextItem) -> None:
        self._items.append(item)
        sums = self._sums[item.part]
        sums[0] += 1
        sums[1] += item.tokens


def _indexed(session: Session, last: Event) -> bool:
    """True iff the per-type index holds the log's last event (so it holds every event)."""
    same: Sequence[object] = session.of_type(type(last))  # type: ignore[type-var]
    return bool(same) and same[-1] is last
