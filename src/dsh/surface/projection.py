"""The surface fold: which events the model sees, in order (docs/architecture.md, "The surface").

``append`` pushes the event's seq; a replace splices the current nodes from ``start`` through
``end`` (positions of current nodes, inclusive) and inserts the new seq at ``start``'s position;
it may not split a tool call from its result (``_split_call_ids``).
The live session and ``fold_surface`` run the same ``SurfaceProjection`` code, so validation at
append and at load cannot drift apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dsh.errors import SurfaceError
from dsh.events import (
    AssistantMessageEvent,
    Event,
    Message,
    ReplaceOp,
    SurfaceEvent,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultEvent,
    UserMessageEvent,
    event_type_of,
    model_message,
)

_SURFACE = (UserMessageEvent, AssistantMessageEvent, ToolResultEvent)


@dataclass(frozen=True, slots=True)
class Replacement:
    """One replace that landed: the new node and the nodes it shadowed."""

    seq: int
    start: int
    end: int
    shadowed_seqs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Undo:
    position: int
    removed: tuple[int, ...]  # () for an append


_UNDO_APPEND = _Undo(position=-1, removed=())  # appends undo by popping; no need to allocate


class SurfaceProjection:
    """The current surface, kept incrementally as events arrive."""

    def __init__(self) -> None:
        self.nodes: list[int] = []
        # Parallel to nodes once someone asks for messages (built lazily: loading a log needs
        # no messages, a live loop asks every step).
        self._messages: list[Message | None] | None = None
        self.replacements: list[Replacement] = []
        self.replace_generation = 0
        self._position: dict[int, int] = {}
        self._events: dict[int, SurfaceEvent] = {}  # every surface event seen, shadowed or not
        self._pairing: list[int] = []  # running tool-call balance after each node
        self._pairing_valid_to = 0

    # ---- queries ----------------------------------------------------------------------------

    def position(self, seq: int) -> int:
        """Index of ``seq`` among the current nodes (SurfaceError if it is not on the surface)."""
        try:
            return self._position[seq]
        except KeyError:
            raise SurfaceError(f"seq {seq} is not a current surface node", seq=seq) from None

    def __contains__(self, seq: int) -> bool:
        return seq in self._position

    def event(self, seq: int) -> SurfaceEvent:
        """The event behind a current node."""
        self.position(seq)
        return self._events[seq]

    def node_events(self) -> list[SurfaceEvent]:
        return [self._events[seq] for seq in self.nodes]

    def messages(self) -> list[Message]:
        """The model's messages in node order (empty assistant messages skipped)."""
        if self._messages is None:
            self._messages = [model_message(self._events[seq]) for seq in self.nodes]
        return [m for m in self._messages if m is not None]

    # ---- folding ----------------------------------------------------------------------------

    def apply(self, event: Event) -> _Undo | None:
        """Fold one event in; raise SurfaceError (changing nothing) if it breaks a rule."""
        if not isinstance(event, _SURFACE):
            return None
        op = event.surface_op
        if isinstance(op, ReplaceOp):
            return self._replace(event, op)
        self._position[event.seq] = len(self.nodes)
        self.nodes.append(event.seq)
        if self._messages is not None:
            self._messages.append(model_message(event))
        self._events[event.seq] = event
        return _UNDO_APPEND

    def _replace(self, event: SurfaceEvent, op: ReplaceOp) -> _Undo:
        seq = event.seq
        kind = event_type_of(event)
        for name, endpoint in (("start", op.start), ("end", op.end)):
            if endpoint not in self._position:
                raise SurfaceError(
                    f"event seq {seq} ({kind}): replace {name} {endpoint} is not a current "
                    "surface node (it was never on the surface or is already shadowed)",
                    seq=seq,
                )
        first, last = self._position[op.start], self._position[op.end]
        if first > last:
            raise SurfaceError(
                f"event seq {seq} ({kind}): replace start {op.start} comes after end {op.end} "
                "on the surface",
                seq=seq,
            )
        shadowed = tuple(self.nodes[first : last + 1])
        sources = set(event.source_event_seqs or ())
        missing = [s for s in shadowed if s not in sources]
        if missing:
            raise SurfaceError(
                f"event seq {seq} ({kind}): sourceEventSeqs miss shadowed node(s) {missing}",
                seq=seq,
            )
        if isinstance(event, ToolResultEvent) and (
            len(shadowed) != 1 or not isinstance(self._events[shadowed[0]], ToolResultEvent)
        ):
            raise SurfaceError(
                f"event seq {seq}: a tool/result replace must shadow exactly one tool/result",
                seq=seq,
            )
        if isinstance(event, ToolResultEvent):
            new_id, old_id = _call_id(event), _call_id(self._events[shadowed[0]])
            if new_id != old_id:
                raise SurfaceError(
                    f"event seq {seq}: a tool/result replace must keep toolCallId {old_id!r} "
                    f"of the result it shadows (seq {shadowed[0]}), not {new_id!r}",
                    seq=seq,
                )
        split = _split_call_ids([self._events[s] for s in shadowed], event)
        if split:
            raise SurfaceError(
                f"event seq {seq} ({kind}): the replace would split tool call(s) {split} from "
                "their result(s): it must cover whole call-and-result exchanges, or carry the "
                "calls and results it shadows",
                seq=seq,
            )
        self.nodes[first : last + 1] = [seq]
        if self._messages is not None:
            self._messages[first : last + 1] = [model_message(event)]
        for old in shadowed:
            del self._position[old]
        self._events[seq] = event
        self._reindex(first)
        self.replace_generation += 1
        self.replacements.append(Replacement(seq, op.start, op.end, shadowed))
        return _Undo(position=first, removed=shadowed)

    def undo(self, undo: _Undo, event: SurfaceEvent) -> None:
        """Take back the last ``apply`` (used when the store refuses the write)."""
        del self._events[event.seq]
        del self._position[event.seq]
        if not undo.removed:
            self.nodes.pop()
            if self._messages is not None:
                self._messages.pop()
            self._pairing_valid_to = min(self._pairing_valid_to, len(self.nodes))
            return
        self.replacements.pop()
        self.nodes[undo.position : undo.position + 1] = list(undo.removed)
        if self._messages is not None:
            self._messages[undo.position : undo.position + 1] = [
                model_message(self._events[seq]) for seq in undo.removed
            ]
        self._reindex(undo.position)
        self.replace_generation -= 1

    def _reindex(self, start: int) -> None:
        for index in range(start, len(self.nodes)):
            self._position[self.nodes[index]] = index
        self._pairing_valid_to = min(self._pairing_valid_to, start)

    # ---- tool pairing -----------------------------------------------------------------------

    def split_call_ids(self, seqs: Sequence[int]) -> list[str]:
        """The tool-call ids a checkpoint (a node with no calls or results) replacing the nodes
        ``seqs`` would split from their results: empty when they hold whole exchanges.
        Compaction asks before it writes anything of a pass (seqs that are no surface event
        count for nothing here; the commit refuses a region that is not on the surface)."""
        return _split_call_ids([self._events[s] for s in seqs if s in self._events], None)

    def pairing_balance_after(self, position: int) -> int:
        """Open tool calls after the node at ``position`` (walking current surface order)."""
        self._refresh_pairing(position + 1)
        return self._pairing[position]

    def _refresh_pairing(self, upto: int) -> None:
        del self._pairing[self._pairing_valid_to :]
        balance = self._pairing[-1] if self._pairing else 0
        for index in range(len(self._pairing), upto):
            seq = self.nodes[index]
            event = self._events[seq]
            if isinstance(event, AssistantMessageEvent):
                balance += len(event.data.message.tool_calls())
            elif isinstance(event, ToolResultEvent):
                balance -= 1
                if balance < 0:
                    raise SurfaceError(
                        f"tool pairing is negative at seq {seq}: a tool result without an open "
                        "tool call (corrupt log)",
                        seq=seq,
                    )
            self._pairing.append(balance)
        self._pairing_valid_to = max(self._pairing_valid_to, upto)


def _pairing_interface(events: Iterable[SurfaceEvent]) -> tuple[Counter[str], Counter[str]]:
    """What a run of nodes shows the rest of the surface about tool pairing: the call ids it
    leaves open (answered after it, or not yet) and the ids of the results it gives to calls
    made before it. Counted in plain dicts (a replace at load checks every node it shadows)."""
    opened: dict[str, int] = {}
    answers_earlier: dict[str, int] = {}
    for event in events:
        if type(event) is AssistantMessageEvent:
            for block in event.data.message.content:
                if type(block) is ToolCallBlock:
                    opened[block.id] = opened.get(block.id, 0) + 1
        elif type(event) is ToolResultEvent:
            call_id = _call_id(event)
            left = opened.get(call_id, 0)
            if left > 0:
                opened[call_id] = left - 1
            else:
                answers_earlier[call_id] = answers_earlier.get(call_id, 0) + 1
    return Counter({k: n for k, n in opened.items() if n > 0}), Counter(answers_earlier)


def _split_call_ids(shadowed: Sequence[SurfaceEvent], by: SurfaceEvent | None) -> list[str]:
    """Call ids whose pairing a replace of ``shadowed`` by ``by`` (None: a node without calls
    or results) would break: the replaced run and its replacement must leave the same calls
    open and answer the same earlier calls, so every result outside still meets its call and
    every call outside its result. A checkpoint therefore covers whole exchanges; a pruned
    result keeps its call id; a regenerated message keeps the calls it answers for."""
    old_open, old_answers = _pairing_interface(shadowed)
    new_open, new_answers = _pairing_interface(() if by is None else (by,))
    if (old_open, old_answers) == (new_open, new_answers):
        return []
    changed = (old_open - new_open) + (new_open - old_open)
    changed += (old_answers - new_answers) + (new_answers - old_answers)
    return sorted(changed)


def _call_id(event: SurfaceEvent) -> str:
    block = event.data.message.content[0]  # type: ignore[union-attr]
    return block.tool_call_id if isinstance(block, ToolResultBlock) else ""


def fold_surface(events: Iterable[Event]) -> tuple[list[int], list[Replacement]]:
    """Fold a whole log: the current nodes and every replace that landed, in log order."""
    projection = SurfaceProjection()
    for event in events:
        projection.apply(event)
    return projection.nodes, projection.replacements


def first_refused(events: Iterable[Event]) -> int | None:
    """Index of the first event the fold refuses (what loading the log would refuse), or None."""
    projection = SurfaceProjection()
    for index, event in enumerate(events):
        try:
            projection.apply(event)
        except SurfaceError:
            return index
    return None
