"""Sessions written straight into a store, for paging and projection tests."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from dsh.compaction import CompactionEngine, make_backend, make_summarizer, run_compact_command
from dsh.config import CompactionSettings
from dsh.events import (
    AssistantMessage,
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
from dsh.store import EventStore
from dsh.surface import Session

T = TypeVar("T")

MODEL = ModelSource(provider="scripted", model="scripted")


def run_apart(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` in a thread of its own (the sync Playwright API owns this thread's loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def user(text: str, turn: int) -> Message:
    return Message(
        id=f"u-{turn}", role="user", content=(TextBlock(text=text),), source=UserSource()
    )


def assistant(text: str, msg_id: str, *calls: ToolCallBlock) -> Message:
    return Message(
        id=msg_id, role="assistant", content=(TextBlock(text=text), *calls), source=MODEL
    )


def tool_turn(session: Session, turn: int, *, lines: int = 12, call_id: str | None = None) -> None:
    """One turn: a prompt, a reply with a read_file call (id ``call_id``, else
    ``call_<turn>``), its result, a final reply."""
    session.append(TurnStart(turn=turn))
    session.append(StepStart(turn=turn, step=1))
    session.append(user(f"Turn {turn}: look at module_{turn}.py", turn))
    call_id = call_id or f"call_{turn}"
    arguments = f'{{"path": "src/module_{turn}.py"}}'
    usage = Usage(input_tokens=120, output_tokens=20, cache_read_tokens=400)
    session.append(
        AssistantMessage(
            turn=turn,
            step=1,
            message=assistant(
                f"Reading module_{turn}.py.",
                f"a-{turn}-1",
                ToolCallBlock(id=call_id, name="read_file", arguments=arguments),
            ),
            usage=usage,
        )
    )
    call = session.append(
        ToolCall(turn=turn, step=1, call_id=call_id, name="read_file", arguments=arguments)
    ).seq
    body = "\n".join(f"{i + 1}\tdef f{turn}_{i}(): return {turn * i}" for i in range(lines))
    result = Message(
        id=f"r-{call_id}",
        role="tool",
        content=(ToolResultBlock(tool_call_id=call_id, content=(TextBlock(text=body),)),),
        source=ToolSource(call_id=call_id),
    )
    session.append(ToolResult(turn=turn, step=1, message=result), source_event_seqs=[call])
    session.append(StepEnd(turn=turn, step=1))
    session.append(StepStart(turn=turn, step=2))
    reply = f"Module {turn} is fine.\n\n```python\ndef f{turn}():\n    return {turn}\n```"
    session.append(
        AssistantMessage(turn=turn, step=2, message=assistant(reply, f"a-{turn}-2"), usage=usage)
    )
    session.append(StepEnd(turn=turn, step=2))
    session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed")))


def long_session(
    store: EventStore,
    cwd: Path,
    *,
    turns: int,
    compact_after: int | None = None,
    call_id: str | None = None,
) -> str:
    """``turns`` tool turns; a real manual /compact (recallable, extractive) after turn
    ``compact_after``. With ``call_id``, every turn's call has that id (a server that numbers
    each reply's calls from ``call_0``)."""
    session = Session.create(store, cwd=cwd)
    settings = CompactionSettings(backend="recallable", retain_tokens=400)
    for turn in range(1, turns + 1):
        tool_turn(session, turn, call_id=call_id)
        if turn == compact_after:
            backend = make_backend(
                settings, make_summarizer(settings, None, None, history=session.events)
            )
            assert backend is not None
            engine = CompactionEngine(session, backend, settings)
            ok, _ = run_apart(run_compact_command(engine, window=128_000, focus="modules"))
            assert ok
    session.close()
    return session.id


def summary_on_an_older_page(store: EventStore, cwd: Path, *, after: int = 49) -> str:
    """A checkpoint whose ``compaction/summary`` lies before the newest page's cut: a counted
    prompt sits between the summary and its checkpoint, then ``after`` more counted messages."""
    session = Session.create(store, cwd=cwd)
    u1 = session.append(user("first prompt", 1)).seq
    a1 = session.append(
        AssistantMessage(turn=1, step=1, message=assistant("first reply", "a1"))
    ).seq
    start = session.append(CompactionStart(compaction_id="p1-1", pass_id="p1", turn=None)).seq
    summary = session.append(
        CompactionSummary(
            compaction_id="p1-1",
            pass_id="p1",
            kind="state",
            summary="STATE SUMMARY TEXT: the first exchange",
            shadowed_range=(u1, a1),
            shadowed_seqs=(u1, a1),
            shadowed_token_count=17,
            provider="extractive",
            model="extractive",
        )
    ).seq
    session.append(user("the prompt between", 2))
    checkpoint = Message(
        id="checkpoint-p1-1",
        role="user",
        content=(TextBlock(text="[checkpoint payload people never see]"),),
        source=PluginSource(plugin="compact", compaction_id="p1-1"),
    )
    session.append(
        checkpoint,
        surface_op=ReplaceOp(start=u1, end=a1),
        source_event_seqs=[start, summary, u1, a1],
    )
    session.append(CompactionEnd(compaction_id="p1-1", pass_id="p1", turn=None))
    for i in range(after):
        if i % 2 == 0:
            session.append(
                AssistantMessage(turn=3, step=i, message=assistant(f"reply {i}", f"r{i}"))
            )
        else:
            session.append(user(f"prompt {i}", 3))
    session.close()
    return session.id
