"""What a riding summariser call carries of the conversation.

A riding call is the conversation's last request as it was sent, then one instruction: every
byte before the instruction is a provider cache hit. Near the window that request leaves too
little room for the pass's answer; the call then carries the request only up to the end of the
span the pass compacts — still a byte prefix of the request as sent, so it still reads from the
cache — instead of leaving the cache for a compact-layout call of its own per region
(docs/compaction.md, "Summariser calls ride the conversation's cache").

A tool result pruned at the crossing that triggers the pass (after the last request was sent)
rides as it was sent, not pruned: the pruned text would break the prefix at that result, and
every token after it would miss the cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dsh.compaction.base import heuristic_total
from dsh.compaction.pruner import unsent_prunes
from dsh.events import Message, surface_message
from dsh.surface import Session

INSTRUCTION_TOKENS = 300
"""Room a riding call's instruction message takes (heuristic tokens, generous)."""


@dataclass(frozen=True, slots=True)
class RidingInput:
    """The conversation a riding call carries, where each surface node sits in it, and the
    output room the call leaves in the window (None: no window known)."""

    conversation: tuple[Message, ...]
    positions: dict[int, int]
    """Surface seq -> 1-based position of its message in the conversation."""
    room: int | None


def sent_prefix(conversation: Sequence[Message], needed: int) -> tuple[Message, ...]:
    """What a riding call carries of ``conversation``: the last request as it was sent (plus
    its text reply, when the reply opened no tool call), when the ``needed`` first messages —
    everything the pass reads — lie within it, so the call hits the provider cache from its
    first byte to its instruction; else the whole conversation."""
    last = next(
        (i for i in range(len(conversation) - 1, -1, -1) if conversation[i].role == "assistant"),
        None,
    )
    if last is None:
        return tuple(conversation)
    cut = last if conversation[last].tool_calls() else last + 1
    return tuple(conversation[:cut]) if needed <= cut else tuple(conversation)


def riding_input(
    session: Session, span: Sequence[int], *, window: int | None, wanted: int, as_sent: bool = True
) -> RidingInput:
    """The request as sent (see ``sent_prefix``), results pruned since then as they were sent;
    cut at the span's last message when the whole request would leave less than ``wanted``
    output tokens (the pass's answer) in ``window``. When even that leaves too little room,
    the pruned results instead (the call then misses the cache from the first of them on, but
    may still fit) — and always after an overflow (``as_sent`` false): the refused request is
    not cached, and its results as sent are what did not fit. After an overflow the call is
    also always cut at the span's last message: the provider refused the whole request, so
    the whole request plus an instruction would be refused too (the newest tool exchange, which
    the overflow pass keeps verbatim, is what did not fit), and the pass failed with it."""
    if not as_sent:
        return _ride(session, span, window=window, wanted=wanted, unsent={}, cut=True)
    unsent = unsent_prunes(session)
    ride = _ride(session, span, window=window, wanted=wanted, unsent=unsent)
    if not unsent or ride.room is None or ride.room >= wanted:
        return ride
    return _ride(session, span, window=window, wanted=wanted, unsent={})


def _ride(
    session: Session,
    span: Sequence[int],
    *,
    window: int | None,
    wanted: int,
    unsent: dict[int, int],
    cut: bool = False,
) -> RidingInput:
    as_sent = list(session.derive_messages())
    positions: dict[int, int] = {}
    tokens_through: list[int] = []  # heuristic tokens of the nodes up to each position
    running = surface = 0  # surface: the nodes as they stand (pruned), for the fixed part
    for seq in session.nodes:
        sent = unsent.get(seq, seq)
        running += session.node_tokens(sent)
        surface += session.node_tokens(seq)
        if surface_message(session.events[seq]) is not None:  # type: ignore[arg-type]
            positions[seq] = len(positions) + 1
            tokens_through.append(running)
            if sent != seq:
                message = session.node_message(sent)
                assert message is not None, "a pruned tool result was a message"
                as_sent[positions[seq] - 1] = message
    messages = tuple(as_sent)
    needed = max((positions.get(s, 0) for s in span), default=0)
    conversation = messages[:needed] if cut else sent_prefix(messages, needed)
    if window is None:
        return RidingInput(conversation, positions, None)
    fixed = heuristic_total(session) - surface

    def room(length: int) -> int:
        carried = tokens_through[length - 1] if length else 0
        return window - fixed - carried - INSTRUCTION_TOKENS

    full = room(len(conversation))
    if full >= wanted or needed >= len(conversation):
        return RidingInput(conversation, positions, full)
    return RidingInput(messages[:needed], positions, room(needed))
