"""What a recallable pass reads from the surface: the material of a slice (checkpoints are
background, never material), the nodes its chunking sees, whether a slice is recall activity
only, and the most recent committed keyword lines that fit a budget."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.compaction.recallable.chunking import SpanNode
from dsh.events import Message, is_checkpoint_event, surface_message
from dsh.surface import Session, clean_cut_after, is_prompt

RECALL_TOOL_NAMES = frozenset({"history_read", "history_search"})


def span_nodes(session: Session, span: Sequence[int]) -> list[SpanNode]:
    nodes = []
    for position, seq in enumerate(span):
        following = span[position + 1] if position + 1 < len(span) else None
        turn_after = following is not None and is_prompt(session.events[following])
        nodes.append(
            SpanNode(
                tokens=session.node_tokens(seq),
                clean_after=clean_cut_after(session, seq),
                turn_after=turn_after,
            )
        )
    return nodes


def slice_material(session: Session, seqs: Sequence[int]) -> tuple[Message, ...]:
    """The messages to summarise: checkpoints are background, never material."""
    messages = []
    for seq in seqs:
        if is_checkpoint_event(session.events[seq]):
            continue
        message = surface_message(session.events[seq])  # type: ignore[arg-type]
        if message is not None:
            messages.append(message)
    return tuple(messages)


def recall_only(messages: Sequence[Message]) -> bool:
    """True if a slice holds nothing but recall tool calls and their results."""
    saw_call = False
    for message in messages:
        if message.role == "assistant":
            calls = message.tool_calls()
            if not calls or any(call.name not in RECALL_TOOL_NAMES for call in calls):
                return False
            saw_call = True
        elif message.role != "tool":  # results: a balanced slice also holds their calls
            return False
    return saw_call


def recent_within(lines: Sequence[str], *, max_chars: int) -> tuple[str, ...]:
    """The most recent lines whose total length fits ``max_chars`` (in their original order)."""
    kept: list[str] = []
    total = 0
    for line in reversed(lines):
        total += len(line) + 1
        if total > max_chars:
            break
        kept.append(line)
    return tuple(reversed(kept))
