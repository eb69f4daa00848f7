"""The compaction seam: what a backend plans and writes, and what a pass returns.

A backend only decides *what* to replace (``plan``) and *what text* replaces it (``summarize``,
``checkpoint_text``); the engine owns the brackets, lock, guard, plan/commit and resume, so no
backend can get those wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from dsh.compaction.summarizer import SummaryTask
from dsh.errors import DshError
from dsh.events import CheckpointKind, Degraded, Usage
from dsh.surface import Session

Reason = Literal["pressure", "overflow", "manual", "region"]


@dataclass(frozen=True, slots=True)
class RegionPlan:
    """One region to replace with one checkpoint."""

    kind: CheckpointKind
    shadowed_seqs: tuple[int, ...]
    """Contiguous current surface nodes, in order."""
    task: SummaryTask | None
    """What to ask the summariser; None for a code-only (pointer) checkpoint."""
    input_range: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    regions: tuple[RegionPlan, ...]


@dataclass(frozen=True, slots=True)
class RegionText:
    """A summarised region, buffered off-surface until the whole pass can commit."""

    kind: CheckpointKind
    shadowed_seqs: tuple[int, ...]
    summary: str
    provider: str
    model: str
    input_range: tuple[int, int] | None = None
    usage: Usage | None = None
    raw_output: str | None = None
    degraded: Degraded | None = None


class CompactionBackend(Protocol):
    name: str

    def plan(
        self,
        session: Session,
        *,
        retain_tokens: int,
        focus: str | None,
        reason: Reason,
        window: int | None = None,
    ) -> Plan | None:
        """The regions to compact now, or None when nothing is compactable. ``window`` is the
        routed model's context window when the caller knows it."""
        ...

    def plan_span(self, session: Session, first: int, last: int) -> Plan:
        """A plan that replaces exactly the current nodes ``first``…``last``."""
        ...

    async def summarize(self, plan: Plan) -> list[RegionText]:
        """Summarise every region (concurrently where it can); raise if the pass must abort."""
        ...

    def checkpoint_text(self, region: RegionText, summary_seq: int) -> str:
        """The checkpoint message text for a region whose summary event has ``summary_seq``."""
        ...


@dataclass(frozen=True, slots=True)
class CheckpointRef:
    kind: CheckpointKind
    summary_seq: int
    checkpoint_seq: int
    shadowed_seqs: tuple[int, ...]
    shadowed_tokens: int


@dataclass(frozen=True, slots=True)
class PassResult:
    """A landed pass."""

    pass_id: str
    checkpoints: tuple[CheckpointRef, ...]
    tokens_before: int
    tokens_after: int

    @property
    def items(self) -> int:
        return sum(len(c.shadowed_seqs) for c in self.checkpoints)

    @property
    def shadowed_tokens(self) -> int:
        return sum(c.shadowed_tokens for c in self.checkpoints)

    @property
    def state_summary_seq(self) -> int:
        """The summary seq of the pass's state-class checkpoint (the last one)."""
        return self.checkpoints[-1].summary_seq


class CompactionError(DshError):
    """A compaction did not land; the surface is unchanged."""


class CompactionBusy(CompactionError):
    """Another compaction holds the lock (an unmatched, live ``compaction/start``)."""


class CompactionRefused(CompactionError):
    """The pass would not shrink the context (inflation guard) or the surface moved under it."""


def contiguous(nodes: Sequence[int], seqs: Sequence[int]) -> bool:
    """True iff ``seqs`` appear in ``nodes`` as one contiguous run, in order."""
    if not seqs:
        return False
    try:
        first = list(nodes).index(seqs[0])
    except ValueError:
        return False
    return list(nodes[first : first + len(seqs)]) == list(seqs)
