"""The long session the web benchmarks serve: turns of 1-3 steps, Markdown replies with a fenced
code block, ``read_file`` calls with 0.3-3 KB results, and a manual ``/compact`` every
``COMPACT_EVERY`` turns written the way the engine writes one."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

from dsh.events import (
    AssistantMessage,
    CommandDone,
    CommandRun,
    CompactionEnd,
    CompactionStart,
    CompactionSummary,
    Message,
    ModelSource,
    PluginSource,
    ReplaceOp,
    StepEnd,
    StepStart,
    TextBlock,
    ToolCall,
    ToolCallBlock,
    ToolResult,
    ToolResultBlock,
    ToolSource,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    Usage,
    UserSource,
)
from dsh.store import JsonlStore
from dsh.surface import Session

MODEL = ModelSource(provider="scripted", model="scripted")
COMPACT_EVERY = 250
WORDS = [
    "parser",
    "config",
    "cache",
    "retry",
    "handler",
    "module",
    "test",
    "fixture",
    "session",
    "buffer",
    "index",
    "token",
    "window",
    "event",
    "stream",
    "worker",
    "queue",
    "schema",
    "migrate",
    "import",
    "export",
    "render",
]


def _prose(rnd: random.Random, words: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(words))


def build_session(
    store: JsonlStore,
    cwd: Path,
    events: int,
    seed: int,
    *,
    prologue: Callable[[Session], None] | None = None,
) -> tuple[str, int, int]:
    """Append turns until the log holds ``events`` events; returns (id, turns, compactions).
    ``prologue`` appends what a session's first run logs before its first turn (its settings)."""
    rnd = random.Random(seed)
    session = Session.create(store, cwd=cwd)
    if prologue is not None:
        prologue(session)
    turn = compactions = 0
    first_unshadowed = 0  # surface position after the latest checkpoint
    while len(session.events) < events:
        turn += 1
        session.append(TurnStart(turn=turn))
        steps = rnd.randint(1, 3)
        for step in range(1, steps + 1):
            session.append(StepStart(turn=turn, step=step))
            if step == 1:
                text = f"Turn {turn}: {_prose(rnd, rnd.randint(8, 40))}"
                session.append(
                    Message(
                        id=f"u-{turn}",
                        role="user",
                        content=(TextBlock(text=text),),
                        source=UserSource(),
                    )
                )
            last = step == steps
            calls = (
                ()
                if last
                else tuple(
                    ToolCallBlock(
                        id=f"call-{turn}-{step}-{i}",
                        name="read_file",
                        arguments=json.dumps({"path": f"src/{rnd.choice(WORDS)}_{i}.py"}),
                    )
                    for i in range(rnd.randint(1, 2))
                )
            )
            code = f"```python\ndef {rnd.choice(WORDS)}():\n    return {turn}\n```"
            reply = f"{_prose(rnd, rnd.randint(10, 50))}\n\n{code}"
            usage = Usage(
                input_tokens=rnd.randint(100, 900),
                output_tokens=rnd.randint(20, 200),
                cache_read_tokens=rnd.randint(1000, 9000),
            )
            session.append(
                AssistantMessage(
                    turn=turn,
                    step=step,
                    usage=usage,
                    message=Message(
                        id=f"a-{turn}-{step}",
                        role="assistant",
                        content=(TextBlock(text=reply), *calls),
                        source=MODEL,
                    ),
                )
            )
            call_seqs = [
                session.append(
                    ToolCall(turn=turn, step=step, call_id=c.id, name=c.name, arguments=c.arguments)
                ).seq
                for c in calls
            ]
            for call, call_seq in zip(calls, call_seqs, strict=True):
                size = rnd.randint(300, 3000)
                lines, total = [], 0
                while total < size:
                    line = f"{len(lines) + 1}\t{_prose(rnd, 8)}"
                    lines.append(line)
                    total += len(line) + 1
                body = Message(
                    id=f"r-{call.id}",
                    role="tool",
                    content=(
                        ToolResultBlock(
                            tool_call_id=call.id, content=(TextBlock(text="\n".join(lines)),)
                        ),
                    ),
                    source=ToolSource(call_id=call.id),
                )
                session.append(
                    ToolResult(turn=turn, step=step, message=body), source_event_seqs=[call_seq]
                )
            session.append(StepEnd(turn=turn, step=step))
        session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed")))
        if turn % COMPACT_EVERY == 0:
            first_unshadowed = _compact(session, turn, first_unshadowed)
            compactions += 1
    session.close()
    return session.id, turn, compactions


def _compact(session: Session, turn: int, first: int) -> int:
    """A manual /compact of the surface after the previous checkpoint, up to the last turn."""
    nodes = session.nodes[first:]
    shadowed = tuple(nodes)
    command = f"cmd-{turn}"
    pass_id = f"pass-{turn}"
    session.append(CommandRun(command_id=command, name="compact", args=""))
    start = session.append(
        CompactionStart(
            compaction_id=f"{pass_id}-1", pass_id=pass_id, turn=None, source_command_id=command
        )
    ).seq
    tokens = sum(session.node_tokens(seq) for seq in shadowed)
    text = f"## Goal\n- keep going (turn {turn})\n\n## Current state\n- {len(shadowed)} items"
    summary = session.append(
        CompactionSummary(
            compaction_id=f"{pass_id}-1",
            pass_id=pass_id,
            kind="state",
            summary=text,
            shadowed_range=(shadowed[0], shadowed[-1]),
            shadowed_seqs=shadowed,
            shadowed_token_count=tokens,
            provider="extractive",
            model="extractive",
        )
    ).seq
    checkpoint = Message(
        id=f"checkpoint-{pass_id}-1",
        role="user",
        content=(TextBlock(text=text),),
        source=PluginSource(
            plugin="compact", compaction_id=f"{pass_id}-1", source_command_id=command
        ),
    )
    session.append(
        checkpoint,
        surface_op=ReplaceOp(start=shadowed[0], end=shadowed[-1]),
        source_event_seqs=[start, summary, *shadowed],
    )
    session.append(CompactionEnd(compaction_id=f"{pass_id}-1", pass_id=pass_id, turn=None))
    session.append(
        CommandDone(
            command_id=command,
            ok=True,
            source_event_seq=summary,
            text=f"Compacted {len(shadowed)} history items (~{tokens} tokens)",
        )
    )
    return first + 1  # the checkpoint now sits where the span was
