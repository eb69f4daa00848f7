"""Committing a pass's regions to the log, strictly left to right, one bracket each.

A region commits as ``compaction/start`` → ``compaction/summary`` → the checkpoint message that
replaces its run of surface nodes → ``compaction/end``. A fresh pass (``commit_pass``) commits
after its ``compaction/plan``, its first region inside the bracket the pass opened as its lock;
an interrupted one (``commit_resumed``) commits its remaining regions from the logged plan, each
in a bracket of its own (``<pass>-<n>r``; ``r2``… when a resume that died took that id). The
engine decides when (``dsh.compaction.engine``; docs/compaction.md, "The events of a pass").
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from dsh.compaction.base import (
    CheckpointRef,
    CompactionBackend,
    CompactionError,
    RegionText,
    checkpoint_message,
    contiguous,
)
from dsh.events import (
    CompactionEnd,
    CompactionStart,
    CompactionStartEvent,
    CompactionSummary,
    ReplaceOp,
)
from dsh.surface import Session

CommitHook = Callable[[int], None]
"""Called with a region's 1-based number right before it commits (crash tests exit there)."""


def commit_pass(
    session: Session,
    backend: CompactionBackend,
    pass_id: str,
    texts: list[RegionText],
    turn: int | None,
    source_command_id: str | None,
    *,
    first_start: CompactionStartEvent | None,
    on_commit: CommitHook | None = None,
) -> tuple[CheckpointRef, ...]:
    """Commit every region of a planned pass; the first in ``first_start``'s bracket (the
    pass's lock) when given."""
    refs = []
    for number, region in enumerate(texts, start=1):
        if on_commit is not None:
            on_commit(number)
        if not contiguous(session.nodes, region.shadowed_seqs):
            raise CompactionError(f"region {number} of pass {pass_id} is no longer on the surface")
        compaction_id = f"{pass_id}-{number}"
        start = first_start if number == 1 and first_start is not None else None
        if start is None:
            start_event = session.append(
                CompactionStart(
                    compaction_id=compaction_id,
                    pass_id=pass_id,
                    turn=turn,
                    source_command_id=source_command_id,
                )
            )
            start_seq = start_event.seq
        else:
            compaction_id = start.data.compaction_id
            start_seq = start.seq
        refs.append(
            _commit_region(
                session, backend, compaction_id, pass_id, region, turn, start_seq, source_command_id
            )
        )
    return tuple(refs)


def commit_resumed(
    session: Session,
    backend: CompactionBackend,
    pass_id: str,
    remaining: Sequence[RegionText],
    turn: int | None,
    first_number: int,
    taken: Collection[str] = (),
) -> tuple[CheckpointRef, ...]:
    """Commit the ``remaining`` regions of an interrupted pass, numbered from ``first_number``;
    an id in ``taken`` (a start an earlier resume logged before its process died too) is not
    used again: ``<pass>-<n>r2``, ``r3``…"""
    refs = []
    for number, region in enumerate(remaining, start=first_number):
        compaction_id = f"{pass_id}-{number}r"
        again = 1
        while compaction_id in taken:
            again += 1
            compaction_id = f"{pass_id}-{number}r{again}"
        start = session.append(
            CompactionStart(compaction_id=compaction_id, pass_id=pass_id, turn=turn)
        )
        refs.append(
            _commit_region(session, backend, compaction_id, pass_id, region, turn, start.seq, None)
        )
    return tuple(refs)


def _commit_region(
    session: Session,
    backend: CompactionBackend,
    compaction_id: str,
    pass_id: str,
    region: RegionText,
    turn: int | None,
    start_seq: int,
    source_command_id: str | None,
) -> CheckpointRef:
    shadowed = region.shadowed_seqs
    price = sum(session.node_tokens(seq) for seq in shadowed)
    summary = session.append(
        CompactionSummary(
            compaction_id=compaction_id,
            pass_id=pass_id,
            kind=region.kind,
            summary=region.summary,
            shadowed_range=(shadowed[0], shadowed[-1]),
            shadowed_seqs=shadowed,
            shadowed_token_count=price,
            input_range=region.input_range,
            provider=region.provider or backend.name,
            model=region.model or backend.name,
            usage=region.usage,
            raw_output=region.raw_output,
            llm_stream_call=region.raw_output is not None,
            degraded=region.degraded,
        )
    )
    text = backend.checkpoint_text(session, region, summary.seq)
    checkpoint = session.append(
        checkpoint_message(text, compaction_id, source_command_id),
        surface_op=ReplaceOp(start=shadowed[0], end=shadowed[-1]),
        source_event_seqs=[start_seq, summary.seq, *shadowed],
    )
    session.append(CompactionEnd(compaction_id=compaction_id, pass_id=pass_id, turn=turn))
    return CheckpointRef(region.kind, summary.seq, checkpoint.seq, shadowed, price)
