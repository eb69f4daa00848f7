"""Tool-result pruning: an oversized result is replaced, on the surface only, by its head and
tail around a marker. The original stays in the log; people keep seeing it."""

from __future__ import annotations

from dsh.config import CompactionSettings
from dsh.events import (
    AssistantMessageEvent,
    CompactionPrune,
    CompactionPruneEvent,
    Message,
    ReplaceOp,
    TextBlock,
    ToolResult,
    ToolResultBlock,
    ToolResultEvent,
)
from dsh.surface import Session

PRUNE_MARKER = "\n… [{omitted} characters pruned from this tool result to save context] …\n"


def pruned_text(text: str, *, head: int, tail: int) -> str:
    omitted = len(text) - head - tail
    return text[:head] + PRUNE_MARKER.format(omitted=omitted) + text[len(text) - tail :]


def prune_tool_results(session: Session, settings: CompactionSettings) -> int:
    """Prune every current tool result longer than the threshold; returns how many."""
    count = 0
    for seq in list(session.nodes):
        text = result_text(session, seq)
        if text is None or len(text) <= settings.prune_threshold_chars:
            continue
        prune_result(session, seq, head=settings.prune_head_chars, tail=settings.prune_tail_chars)
        count += 1
    return count


def result_text(session: Session, seq: int) -> str | None:
    """The text of the tool result at node ``seq`` (None when the node is not a tool result)."""
    event = session.surface.event(seq)
    if not isinstance(event, ToolResultEvent):
        return None
    block = event.data.message.content[0]
    assert isinstance(block, ToolResultBlock)
    return "".join(part.text for part in block.content)


def prune_result(session: Session, seq: int, *, head: int, tail: int) -> int:
    """Replace the tool result at node ``seq`` by its head and tail; returns the new node's seq."""
    event = session.surface.event(seq)
    assert isinstance(event, ToolResultEvent)
    block = event.data.message.content[0]
    assert isinstance(block, ToolResultBlock)
    text = "".join(part.text for part in block.content)
    prune = session.append(
        CompactionPrune(
            shadowed_range=(seq, seq),
            shadowed_seqs=(seq,),
            shadowed_token_count=session.node_tokens(seq),
        )
    )
    message = Message(
        id=f"{event.data.message.id}-pruned",
        role="tool",
        content=(
            ToolResultBlock(
                tool_call_id=block.tool_call_id,
                content=(TextBlock(text=pruned_text(text, head=head, tail=tail)),),
                is_error=block.is_error,
            ),
        ),
        source=event.data.message.source,
    )
    pruned = session.append(
        ToolResult(
            turn=event.data.turn,
            step=event.data.step,
            message=message,
            error=event.data.error,
            meta=event.data.meta,
        ),
        surface_op=ReplaceOp(start=seq, end=seq),
        source_event_seqs=[prune.seq, seq],
    )
    return pruned.seq


def unsent_prunes(session: Session) -> dict[int, int]:
    """Tool results the last request carried in full and that were pruned since (at the
    crossing that triggers a pass): the pruned node's seq -> the seq of the result as it was
    sent. The last request is the one the last assistant message answered (empty or not); a
    result newer than that message was never sent, and stays pruned. A summariser call that
    extends the last request carries these as sent: the pruned text would break the cached
    prefix at the first of them."""
    last_reply = next(
        (
            seq
            for seq in reversed(session.nodes)
            if isinstance(session.events[seq], AssistantMessageEvent)
        ),
        -1,
    )
    unsent: dict[int, int] = {}
    for seq in session.nodes:
        sources = getattr(session.events[seq], "source_event_seqs", None)
        if seq > last_reply and sources and len(sources) == 2:
            prune, original = sources
            if original < last_reply and isinstance(session.events[prune], CompactionPruneEvent):
                unsent[seq] = original
    return unsent
