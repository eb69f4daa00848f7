"""The payloads of the compaction events: brackets, summaries, plans, prunes.

What each means and in which order a pass writes them: docs/compaction.md, "The events of a
pass"."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from dsh.errors import error_line
from dsh.events.messages import Payload, Struct, Usage

if TYPE_CHECKING:  # the event classes each payload names in its base (type-level only)
    from dsh.events.types import (  # noqa: F401
        CompactionEndEvent,
        CompactionPlanEvent,
        CompactionPruneEvent,
        CompactionStartEvent,
        CompactionSummaryEvent,
    )


class CompactionStart(Payload["CompactionStartEvent"], kw_only=True, frozen=True):
    compaction_id: str
    pass_id: str | None = None
    turn: int | None
    source_command_id: str | None = None


CheckpointKind = Literal["index", "state"]
Degraded = Literal["pointer", "fallback"]


class CompactionSummary(Payload["CompactionSummaryEvent"], kw_only=True, frozen=True):
    compaction_id: str
    pass_id: str | None = None
    kind: CheckpointKind | None = None
    """``None`` is a legacy summary and counts as state."""
    summary: str
    shadowed_range: tuple[int, int]
    shadowed_seqs: tuple[int, ...]
    shadowed_token_count: int
    input_range: tuple[int, int] | None = None
    provider: str
    model: str
    usage: Usage | None = None
    raw_output: str | None = None
    llm_stream_call: bool = False
    degraded: Degraded | None = None


class CompactionEnd(Payload["CompactionEndEvent"], kw_only=True, frozen=True):
    """Closes a ``compaction/start``; ``error`` says why the pass did not finish (what it had
    not committed changed nothing the model sees). A pass a dead process left open before its
    plan is closed when the session is next opened for writing, with the error ``the process
    ended during the pass``. ``turn`` is null for a manual pass (``/compact``, ``dsh
    compact``)."""

    compaction_id: str
    pass_id: str | None = None
    turn: int | None
    error: str | None = None


def unfinished_pass_note(error: str) -> str:
    """What people are told of a compaction pass that did not finish: its ``compaction/end``'s
    ``error`` (a summariser that failed, a refusal, ``cancelled``, the process that ended during
    it), as ``error_line`` shows it; every face's transcript, and the answer a repair gives a
    killed ``/compact``. Such a pass changed nothing the model sees."""
    return f"Compaction pass did not finish: {error_line(error) or 'no reason was logged'}"


class Region(Struct, kw_only=True, frozen=True):
    """What every stage of a region shares, from plan to log: which checkpoint it becomes and
    the nodes it replaces."""

    kind: CheckpointKind
    shadowed_seqs: tuple[int, ...]
    """Contiguous current surface nodes, in order."""
    input_range: tuple[int, int] | None = None
    """State only: the wider conversation span the state summarises."""


class RegionText(Region, kw_only=True, frozen=True):
    """A written region, held off-surface until its pass commits and logged as it is."""

    summary: str
    raw_output: str | None = None
    usage: Usage | None = None
    degraded: Degraded | None = None
    provider: str | None = None
    """Who wrote the summary (so a resumed commit can log it); absent in older plans."""
    model: str | None = None


class CompactionPlan(Payload["CompactionPlanEvent"], frozen=True):
    pass_id: str
    regions: tuple[RegionText, ...]


class CompactionPrune(Payload["CompactionPruneEvent"], frozen=True):
    shadowed_range: tuple[int, int]
    shadowed_seqs: tuple[int, ...]
    shadowed_token_count: int
