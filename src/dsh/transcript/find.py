"""Find in a session's transcript: what people see, originals of compacted history included.

``find_in_transcript(events, query)`` walks the human transcript (``transcript_items``: every
append-origin message, the tool cards people see, one marker per compaction pass with its
summaries) and returns each item whose text contains ``query`` (case-insensitive), in log order,
with a short snippet around the first match. A checkpoint's payload is never searched: it is not
in the transcript.

A hit's ``kind`` says what the item is as people read it: a note dsh itself gave the model as a
user (or system) turn (``dsh undo``'s ``[undo] …``, the output-limit notice) is ``context``, with
the ``plugin`` that added it, as the transcript shows it (``Context from undo``), never ``user``:
nobody typed it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from dsh.events import Event, Message, ReasoningBlock, TextBlock
from dsh.transcript.call_fold import OverLimitItem, calls_by_name, over_limit_note
from dsh.transcript.projection import (
    MarkerItem,
    MessageItem,
    PassDetails,
    ToolCallItem,
    ToolResultItem,
    project,
)
from dsh.transcript.render import injected_by

SNIPPET_CHARS = 80
MAX_QUERY_CHARS = 200

HitKind = Literal["user", "assistant", "system", "context", "tool-call", "tool-result", "marker"]


@dataclass(frozen=True, slots=True)
class Hit:
    seq: int
    """The seq of the transcript item (a tool result's own seq: its card is its call's)."""
    kind: HitKind
    snippet: str
    call_id: str | None = None
    card_seq: int | None = None
    """A tool hit's card: the seq of the call it shows under (a result's paired call, or its
    own seq when no shown call was open for it). Ids repeat across replies; this does not."""
    plugin: str | None = None
    """A ``context`` hit's plugin (``undo``): who added the note. None for other hits."""


def find_in_transcript(events: Iterable[Event], query: str, *, limit: int = 500) -> list[Hit]:
    """Items whose text contains ``query`` (case-insensitive, whitespace-trimmed), log order,
    at most ``limit`` (the first ones)."""
    needle = query.strip().lower()
    if not needle:
        return []
    # the whole log first: a marker stands at its pass's first checkpoint, and the pass's
    # later summaries (its other stubs, its state) are logged after it
    items, details = project(events)
    hits: list[Hit] = []
    for item in items:
        for kind, text, call_id in _texts(item, details):
            at = text.lower().find(needle)
            if at >= 0:
                snippet = _snippet(text, at, len(needle))
                plugin = injected_by(item.message) if isinstance(item, MessageItem) else None
                hits.append(Hit(item.seq, kind, snippet, call_id, _card_seq(item), plugin))
                break
        if len(hits) >= limit:
            return hits
    return hits


def _texts(
    item: object, details: Mapping[str, PassDetails]
) -> list[tuple[HitKind, str, str | None]]:
    if isinstance(item, MessageItem):
        kind = _message_kind(item.message)
        blocks = item.message.content
        text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
        reasoning = "".join(b.text for b in blocks if isinstance(b, ReasoningBlock))
        return [(kind, text, None), (kind, reasoning, None)]
    if isinstance(item, ToolCallItem):
        return [("tool-call", f"{item.name} {item.arguments}", item.call_id)]
    if isinstance(item, ToolResultItem):
        return [("tool-result", item.text, item.call_id)]
    if isinstance(item, OverLimitItem):  # the one card of a reply's calls that did not run
        return [("tool-call", unrun_text(item), None)]
    if isinstance(item, MarkerItem):
        found = details.get(item.pass_id)
        summaries = found.summaries if found is not None else []
        return [("marker", text, None) for _, text in summaries]
    return []


def _message_kind(message: Message) -> HitKind:
    """``context`` for a note dsh added (``Context from undo``: nobody typed it), else the role."""
    if injected_by(message) is not None:
        return "context"
    if message.role == "assistant":
        return "assistant"
    return "system" if message.role == "system" else "user"


def unrun_text(item: OverLimitItem) -> str:
    """What a find looks in for the card of a reply's calls that did not run: its note, the
    tools named, and each call (``name arguments``, as a tool card's)."""
    lines = [over_limit_note(item.asked, item.limit), calls_by_name([c.name for c in item.calls])]
    lines += [f"{call.name} {call.arguments}" for call in item.calls]
    return "\n".join(lines)


def _card_seq(item: object) -> int | None:
    if isinstance(item, ToolCallItem | OverLimitItem):
        return item.seq
    if isinstance(item, ToolResultItem):
        return item.card_seq if item.card_seq is not None else item.seq
    return None


def _snippet(text: str, at: int, length: int) -> str:
    """About ``SNIPPET_CHARS`` of ``text`` around ``text[at:at+length]``, on one line."""
    room = max(0, (SNIPPET_CHARS - length) // 2)
    start, end = max(0, at - room), min(len(text), at + length + room)
    body = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")
