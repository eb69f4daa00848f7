"""The calls of one reply that ``tools.max_calls_per_reply`` kept from running, as ONE card.

A runaway reply asking for 300 calls runs the first 32; each of the other 268 is logged
(``tool/call``, marked ``overLimit``) and answered with a ``TOO_MANY_CALLS`` error result
(``dsh.agent.call_cap``). The model reads every one of those results (providers need each call
paired with its result); people would read a wall of 268 identical red cards. So the
person-facing transcript shows them as one item (``OverLimitItem``, at the first such call):
how many did not run and why, and the tool names they gave (``bash ×200, read_file ×68``),
each call kept in the item for a face that expands it. Their ``tool/call`` events and their
results add nothing else; every other call keeps its own card, a failed one included.

``CallFold`` holds the rule for every text of the transcript (the projector's items and
``dsh.transcript.text.iter_transcript_blocks``), from the events' own marks: a marked call of
the latest reply folds when it is among that reply's calls past the mark's limit; a result
folds when it answers such a call (the calls that ran with the same callId answered first:
their results are logged before any of the unrun ones').
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from dsh.events import ToolCall, ToolCallBlock

LIMIT_OPTION = "tools.max_calls_per_reply"


@dataclass(frozen=True, slots=True)
class UnrunCall:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class OverLimitItem:
    """The calls of one reply past ``tools.max_calls_per_reply``, none of them run: one card
    where the first of their ``tool/call`` events is."""

    seq: int
    asked: int
    """How many tool calls the reply asked for."""
    limit: int
    """How many of them ran (the limit)."""
    calls: tuple[UnrunCall, ...]
    """The calls that did not run, in the reply's order (``asked - limit`` of them)."""


def over_limit_note(asked: int, limit: int) -> str:
    """What the fold of a reply's unrun calls says: ``268 more calls not run: the reply asked
    for 300, at most 32 run per reply (tools.max_calls_per_reply)``."""
    count = asked - limit
    calls = "1 more call" if count == 1 else f"{count} more calls"
    return (
        f"{calls} not run: the reply asked for {asked}, at most {limit} run per reply "
        f"({LIMIT_OPTION})"
    )


def calls_by_name(names: Sequence[str]) -> str:
    """The tool names ``names`` hold, each once with how many times: ``bash ×200, read_file
    ×68`` (most first; a tie in the order they first come)."""
    counts = Counter(names)
    ranked = sorted(counts.items(), key=lambda pair: -pair[1])  # stable: first come first
    return ", ".join(f"{name} ×{count}" for name, count in ranked)


def over_limit_text(item: OverLimitItem) -> str:
    """The fold as one line of text (``dsh sessions show``): the note and the names."""
    names = calls_by_name([call.name for call in item.calls])
    return f"{over_limit_note(item.asked, item.limit)}; they named {names}"


class CallFold:
    """Which ``tool/call`` events and results of the latest reply fold into its one
    ``OverLimitItem`` (module docstring)."""

    __slots__ = ("_calls", "_folded", "_ran", "_unanswered", "_unlogged")

    def __init__(self) -> None:
        self._calls: tuple[ToolCallBlock, ...] = ()
        self._folded = False
        self._unlogged: Counter[str] = Counter()
        """callIds of the fold's calls whose ``tool/call`` has not come yet."""
        self._unanswered: Counter[str] = Counter()
        """callIds of the fold's calls whose result has not come yet."""
        self._ran: Counter[str] = Counter()
        """callIds of the reply's calls that ran and share an id with a folded one, whose
        result has not come yet (it comes first, and is theirs)."""

    def reply(self, calls: Sequence[ToolCallBlock]) -> None:
        """An append-origin assistant message with these tool calls: the latest reply."""
        self._calls = tuple(calls)
        self._folded = False
        self._unlogged.clear()
        self._unanswered.clear()
        self._ran.clear()

    def call(self, seq: int, data: ToolCall) -> tuple[bool, OverLimitItem | None]:
        """A ``tool/call`` of the latest reply: whether it folds (shows no card of its own),
        and the fold to show when it is the first call folded."""
        if not data.over_limit:
            return False, None
        if self._unlogged[data.call_id] > 0:
            self._unlogged[data.call_id] -= 1
            return True, None
        limit = data.over_limit
        if self._folded or not 0 < limit < len(self._calls):
            return False, None  # a mark the reply does not bear out: a card of its own
        over = self._calls[limit:]
        if all(call.id != data.call_id for call in over):
            return False, None
        self._folded = True
        over_ids = Counter(call.id for call in over)
        self._unlogged.update(over_ids)
        self._unlogged[data.call_id] -= 1
        self._unanswered.update(over_ids)
        self._ran.update(call.id for call in self._calls[:limit] if call.id in over_ids)
        calls = tuple(UnrunCall(call.id, call.name, call.arguments) for call in over)
        return True, OverLimitItem(seq, len(self._calls), limit, calls)

    def result(self, call_id: str) -> bool:
        """Whether the result of ``call_id`` answers a folded call (it shows nothing)."""
        if not self._folded:  # most replies
            return False
        if self._ran[call_id] > 0:
            self._ran[call_id] -= 1
            return False
        if self._unanswered[call_id] > 0:
            self._unanswered[call_id] -= 1
            return True
        return False
