"""Trigger policy shared by both backends: refusal back-off per threshold crossing, stale
material, and what an overflow keeps (docs/compaction.md, "Triggers", "Hysteresis and futility"
and "Failure handling").
"""

from __future__ import annotations

from dataclasses import dataclass

from dsh.compaction.base import CompactionBackend
from dsh.compaction.pruner import prune_result, result_text
from dsh.config import CompactionSettings
from dsh.events import AssistantMessageEvent, is_checkpoint_event
from dsh.surface import Session, retain_boundary

MAX_REFUSALS = 3
"""Refused passes allowed in one threshold crossing before the engine stops trying."""

MARKER_CHARS = 80
"""Room the prune marker takes in a pruned result."""


@dataclass(slots=True)
class Crossing:
    """What happened since the context last crossed the threshold."""

    refusals: int = 0
    refused_at: int | None = None
    """Stale material (tokens) at the last refusal or failed pass."""
    gave_up: bool = False
    warned: bool = False

    def reset(self) -> None:
        self.refusals, self.refused_at, self.gave_up, self.warned = 0, None, False, False

    def waiting(self, stale: int, chunk: int) -> bool:
        """True while the stale material has not grown by ``chunk`` since the last refusal or
        failed pass."""
        return self.refused_at is not None and stale < self.refused_at + chunk

    def refused(self, stale: int) -> None:
        self.refusals += 1
        self.refused_at = stale

    def failed(self, stale: int) -> None:
        """A pass failed (its summariser errored, timed out, answered junk): the next waits for
        the stale material to grow as after a refusal, so a dead summariser is not called at
        every step (each call retried with back-off), but failures never give up."""
        self.refused_at = stale


def stale_tokens(backend: CompactionBackend, session: Session, retain_tokens: int) -> int:
    """Heuristic size of what a pass would make stale (checkpoints excluded)."""
    own = getattr(backend, "stale_tokens", None)
    if own is not None:
        return int(own(session, retain_tokens))
    keep = retain_boundary(session, retain_tokens)
    return sum(
        session.node_tokens(seq)
        for seq in session.nodes[:keep]
        if not is_checkpoint_event(session.events[seq])
    )


def retry_step(settings: CompactionSettings, window: int) -> int:
    """How much the stale material must grow before a refused pass is tried again: a chunk,
    but never more than a quarter of the window."""
    return max(1, min(settings.chunk, window // 4))


def keep_newest_tool_exchange(session: Session, budget: int, ceiling: int | None = None) -> int:
    """Retain figure for an overflow pass: the newest tool call and everything after it stay
    verbatim; a result of that exchange is pruned first when the exchange alone exceeds
    ``budget`` tokens. 0 when the surface holds no tool call (compact everything), and when the
    exchange, its results pruned, still exceeds ``ceiling``: a reply whose calls alone take the
    room (300 calls, 38 KB, in an 8k window) kept verbatim left every later request over the
    window, the session stuck; compacted with the rest, the step goes on from its summary."""
    nodes = session.nodes
    start = None
    for index in range(len(nodes) - 1, -1, -1):
        event = session.events[nodes[index]]
        if isinstance(event, AssistantMessageEvent) and event.data.message.tool_calls():
            start = index
            break
    if start is None:
        return 0
    group = list(nodes[start:])
    tokens = sum(session.node_tokens(seq) for seq in group)
    if tokens > budget:
        others = sum(session.node_tokens(seq) for seq in group if result_text(session, seq) is None)
        results = [seq for seq in group if result_text(session, seq) is not None]
        share = max(0, (budget - others) * 4 // max(1, len(results)) - MARKER_CHARS)
        head = max(1, share * 4 // 5)
        tail = max(1, share - head)
        for seq in results:
            text = result_text(session, seq)
            if text is not None and len(text) > head + tail + MARKER_CHARS:
                prune_result(session, seq, head=head, tail=tail)
        tokens = sum(session.node_tokens(seq) for seq in session.nodes[start:])
    if ceiling is not None and tokens > ceiling:
        return 0
    return tokens
