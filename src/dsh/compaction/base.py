"""The compaction seam: what a backend plans and writes, and what a pass returns.

A backend only decides *what* to replace (``plan``) and *what text* replaces it (``summarize``,
``checkpoint_text``); the engine owns the brackets, lock, guard, plan/commit and resume, so no
backend can get those wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from dsh.compaction.anchors import Anchor
from dsh.compaction.summarizer import SummaryTask
from dsh.errors import DshError
from dsh.events import (
    CheckpointKind,
    CompactionSummaryEvent,
    Message,
    PluginSource,
    Region,
    TextBlock,
)
from dsh.events import RegionText as RegionText  # re-exported: backends write them
from dsh.surface import Session, system_tokens, tools_tokens

Reason = Literal["pressure", "overflow", "manual"]


class RegionPlan(Region, kw_only=True, frozen=True):
    """One region to replace with one checkpoint, as planned: the backend writes it into a
    ``RegionText`` (the same head fields plus the text), which the plan event logs."""

    task: SummaryTask | None
    """What to ask the summariser; None for a code-only (pointer or rollup) checkpoint."""
    code_text: str | None = None
    """The text of a checkpoint written by code at plan time (a rollup of the oldest stubs)."""
    estimate_tokens: int = 0
    """Expected price of the checkpoint this region becomes (its budgeted size)."""
    anchors: tuple[Anchor, ...] = ()
    """Index regions: the slice's rarest literals, ranked at plan time (O(the slice)) so no CPU
    work serialises the concurrent summariser phase."""
    min_tokens: int = 0
    """Least price the checkpoint can have (framing and footer around the shortest text): if
    even that cannot shrink the context, no model is called."""
    replaced: tuple[tuple[str, str], ...] = ()
    """``(old, new)`` settings whose value changed later in the pass's span: every line of the
    checkpoint naming ``old`` is marked ``(old → new)``, so none presents it as current."""


@dataclass(frozen=True, slots=True)
class Plan:
    regions: tuple[RegionPlan, ...]
    pending: object = None
    """Backend-private work the plan leaves for ``summarize`` (the recallable backend's
    ranking, done beside the summariser call); None when there is none."""


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

    async def summarize(self, plan: Plan) -> list[RegionText]:
        """Summarise every region (concurrently where it can); raise if the pass must abort."""
        ...

    def checkpoint_text(self, session: Session, region: RegionText, summary_seq: int) -> str:
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


StandingAfterPass = Callable[[Session], int]
"""Tokens the next request's fixed part (system and tools) gains once a pass lands: the recall
tools and their prompt section, offered only once the log holds a checkpoint."""


def has_checkpoint(session: Session) -> bool:
    """True once the log holds a ``compaction/summary``: something for recall to read."""
    return bool(session.of_type(CompactionSummaryEvent))


def nothing_to_come(session: Session) -> int:
    """The default ``StandingAfterPass``: a pass adds nothing to the system and tools."""
    return 0


def heuristic_total(session: Session) -> int:
    """The next request's size by the heuristic alone (system + tools + every node): the one
    metric the guard compares on both sides, and pressure planning estimates with."""
    header = session.request_header
    fixed = 0 if header is None else system_tokens(header.system) + tools_tokens(header.tools)
    return fixed + sum(session.node_tokens(seq) for seq in session.nodes)


def checkpoint_message(
    text: str, compaction_id: str = "x", source_command_id: str | None = None
) -> Message:
    """The ``user/message`` a checkpoint lands as (also used to price one before it exists)."""
    return Message(
        id=f"checkpoint-{compaction_id}",
        role="user",
        content=(TextBlock(text=text),),
        source=PluginSource(
            plugin="compact", compaction_id=compaction_id, source_command_id=source_command_id
        ),
    )


def contiguous(nodes: Sequence[int], seqs: Sequence[int]) -> bool:
    """True iff ``seqs`` appear in ``nodes`` as one contiguous run, in order."""
    if not seqs:
        return False
    try:
        first = list(nodes).index(seqs[0])
    except ValueError:
        return False
    return list(nodes[first : first + len(seqs)]) == list(seqs)
