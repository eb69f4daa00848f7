"""Sessions with compaction brackets for the recall tests.

``bracket`` writes one bracket the way the engine does (start → summary → checkpoint replace →
end) and can leave out or break any part of it; its checkpoint text ends with the code-written
footer, so nested checkpoints carry their own ``c<summarySeq>`` pointer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.compaction.prompts import footer, frame_stub, frame_summary
from dsh.events import (
    CheckpointKind,
    CompactionEnd,
    CompactionStart,
    CompactionSummary,
    ReplaceOp,
)
from dsh.store import MemoryStore
from dsh.surface import Session
from dsh.tools.base import Caller, ToolContext, ToolOutput
from tests.helpers import (
    MODEL,
    PROVIDER,
    append_chat_turn,
    append_tool_turn,
    checkpoint_message,
    heuristic_price,
    new_session,
)


@dataclass
class Bracket:
    start: int
    summary: int
    node: int | None
    end: int | None
    text: str

    @property
    def id(self) -> str:
        return f"c{self.summary}"


def bracket(
    session: Session,
    shadowed: Sequence[int],
    body: str,
    *,
    kind: CheckpointKind | None = "state",
    compaction_id: str,
    pass_id: str | None = None,
    with_replace: bool = True,
    with_end: bool = True,
    end_error: str | None = None,
    input_range: tuple[int, int] | None = None,
) -> Bracket:
    """One compaction of the contiguous surface span ``shadowed``; the checkpoint text is the
    framed ``body`` followed by the footer naming this bracket's summary seq."""
    summary_seq = len(session.events) + 1
    span = (shadowed[0], shadowed[-1])
    framed = frame_stub(body) if kind == "index" else frame_summary(body)
    text = f"{framed}\n{footer(summary_seq, span)}"
    start = session.append(
        CompactionStart(compaction_id=compaction_id, pass_id=pass_id, turn=None)
    ).seq
    summary = session.append(
        CompactionSummary(
            compaction_id=compaction_id,
            pass_id=pass_id,
            kind=kind,
            summary=body,
            shadowed_range=span,
            shadowed_seqs=tuple(shadowed),
            shadowed_token_count=heuristic_price(session, shadowed),
            input_range=input_range,
            provider=PROVIDER,
            model=MODEL,
        )
    ).seq
    assert summary == summary_seq
    node = None
    if with_replace:
        node = session.append(
            checkpoint_message(text, compaction_id),
            surface_op=ReplaceOp(start=shadowed[0], end=shadowed[-1]),
            source_event_seqs=[start, summary, *shadowed],
        ).seq
    end = None
    if with_end:
        end = session.append(
            CompactionEnd(compaction_id=compaction_id, pass_id=pass_id, turn=None, error=end_error)
        ).seq
    return Bracket(start=start, summary=summary, node=node, end=end, text=text)


NEEDLE = "ERR_TRAILING_SLICE_7731"
"""Text that exists only in the span pass 1's state checkpoint shadows."""


@dataclass
class TwoPasses:
    """Pass 1: an index stub (turn 1) and a state checkpoint (turn 2, holding ``NEEDLE``).
    Pass 2: an index stub over [pass 1's state, turn 3] and a new state (turn 4)."""

    session: Session
    index1: Bracket
    state1: Bracket
    index2: Bracket
    state2: Bracket
    turn2_surface: list[int]


def two_passes(session: Session | None = None) -> TwoPasses:
    session = session if session is not None else new_session(MemoryStore())
    t1 = append_tool_turn(
        session,
        "open the config",
        calls=[("read_file", '{"path":"app.toml"}', "port = 8080\nretries = 5")],
        final="the port is 8080",
    )
    t2 = append_tool_turn(
        session,
        "run the migration",
        calls=[("bash", '{"command":"make migrate"}', f"migration failed: {NEEDLE} on users")],
        final="the migration failed on the users table",
    )
    index1 = bracket(
        session,
        t1.surface,
        "Read app.toml.\nKeywords — config: port=8080",
        kind="index",
        compaction_id="k-1",
        pass_id="p1",
    )
    state1 = bracket(
        session,
        t2.surface,
        "## Goal\nmigrate the database\n## Current state\nmigration failing",
        kind="state",
        compaction_id="k-2",
        pass_id="p1",
    )
    t3 = append_chat_turn(session, "what next?", "let me check the users schema")
    t4 = append_chat_turn(session, "add the index", "index added on users.email")
    assert state1.node is not None
    index2 = bracket(
        session,
        [state1.node, *t3.surface],
        "Asked what next; checking the users schema.\nKeywords — table: users",
        kind="index",
        compaction_id="k-3",
        pass_id="p2",
    )
    state2 = bracket(
        session,
        t4.surface,
        "## Goal\nmigrate the database\n## Current state\nindex on users.email added",
        kind="state",
        compaction_id="k-4",
        pass_id="p2",
    )
    append_chat_turn(session, "and now?", "now rerun the migration")
    return TwoPasses(session, index1, state1, index2, state2, t2.surface)


def ctx(session: Session, caller: Caller = "agent") -> ToolContext:
    return ToolContext(
        workspace=Path("/tmp"),
        session_id=session.id,
        call_id="call-1",
        history=session.events,
        caller=caller,
    )


def run_tool(tool: Any, args: dict[str, Any], session: Session, caller: Caller = "agent") -> Any:
    output: ToolOutput = asyncio.run(tool.run(args, ctx(session, caller)))
    return output
