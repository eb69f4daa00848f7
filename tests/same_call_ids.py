"""Sessions whose replies all number their tool calls from ``call_0``, as llama.cpp and some vLLM
and Ollama versions do, built by the real agent loop with the keyless scripted provider.

``SCRIPT``'s two tool replies both call ``call_0``: the first reads a file that is there (its
card: done, the file's text), the second lists a directory that is not (its card: an error).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import strategies as st

from dsh.agent import Agent, AgentConfig, tool_calls
from dsh.events import (
    AssistantMessage,
    Event,
    StepEnd,
    StepStart,
    ToolCall,
    ToolCallBlock,
    ToolResult,
    TurnStart,
)
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.llm.types import ModelRequest, Provider, StreamEvent, ToolCallDelta
from dsh.store import EventStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.registry import ToolRegistry, default_tools
from tests.helpers import assistant_message, fixed_clock, tool_result_message, user_message

T = TypeVar("T")

FIRST_FILE = "first.txt"
FIRST_OUTPUT = "FIRST-CALL-OUTPUT from the file"
MISSING_DIR = "no-such-dir"

SCRIPT: list[dict[str, Any]] = [
    {
        "text": "I read the file first.",
        "toolCalls": [{"name": "read_file", "arguments": {"path": FIRST_FILE}}],
    },
    {
        "text": "Now the directory.",
        "toolCalls": [{"name": "list_dir", "arguments": {"path": MISSING_DIR}}],
    },
    {"text": "All done."},
]
PROMPT = "Read first.txt, then list no-such-dir."


class PerReplyCallIds:
    """Streams another provider's replies with each reply's tool calls numbered from ``call_0``
    (the id of call ``i`` of every reply is ``call_i``)."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        async for event in self.inner.stream(request, history=history):
            if isinstance(event, ToolCallDelta) and event.id is not None:
                event = dataclasses.replace(event, id=f"call_{event.index}")
            yield event


def prepare_workspace(workspace: Path) -> None:
    """The file the first call reads (the directory the second lists is missing)."""
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / FIRST_FILE).write_text(FIRST_OUTPUT + "\n")


def same_id_agent(session: Session, workspace: Path) -> Agent:
    """The real loop over ``session`` with the scripted model playing ``SCRIPT``, its calls
    numbered per reply."""
    provider = PerReplyCallIds(ScriptedProvider(parse_script(SCRIPT), model="scripted"))
    return Agent(
        session,
        provider,
        ToolRegistry(default_tools()),
        ApprovalPolicy("auto"),
        config=AgentConfig(
            provider="scripted",
            model="scripted",
            system="You are dsh, under test.",
            context_window=128_000,
            retry_base_delay=0.0,
        ),
        workspace=workspace,
    )


def run_apart(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` in a thread of its own (a browser test's Playwright owns this thread's
    event loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def run_same_id_turn(store: EventStore, workspace: Path) -> str:
    """Create a session in ``store`` and run ``PROMPT`` through the real loop; its id."""
    prepare_workspace(workspace)
    session = Session.create(store, cwd=workspace)
    run_apart(same_id_agent(session, workspace).run_turn(PROMPT))
    session.close()
    return session.id


class ProcessDied(BaseException):
    """Stands for the process being killed: no ``except Exception`` closes anything."""


@contextlib.contextmanager
def failing_second_result(error: BaseException) -> Iterator[None]:
    """Make the loop raise ``error`` where it would log the second reply's result (its
    ``tool/call`` is logged, its tool has run), while the block runs."""
    log_result = tool_calls.log_tool_result
    calls = 0

    def failing(*args: Any, **kwargs: Any) -> int:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise error
        return log_result(*args, **kwargs)

    tool_calls.log_tool_result = failing
    try:
        yield
    finally:
        tool_calls.log_tool_result = log_result


def crash_in_second_reply(store: EventStore, workspace: Path) -> str:
    """A session whose process died while the second ``call_0`` ran: its turn is left open
    (crash repair closes it when the session is next opened for writing); its id."""
    prepare_workspace(workspace)
    session = Session.create(store, cwd=workspace)
    agent = same_id_agent(session, workspace)
    try:
        with failing_second_result(ProcessDied()):
            run_apart(agent.run_turn(PROMPT))
    except ProcessDied:
        pass
    else:
        raise AssertionError("the turn ran to its end")
    session.close()
    return session.id


# ---- random logs of replies that number their calls per reply --------------------------------

TOOL_NAMES = ("read_file", "list_dir", "grep", "bash")


@dataclasses.dataclass(frozen=True)
class ReplySpec:
    """One reply's calls ``call_0`` … ``call_{k-1}`` (their tool names), which were logged as
    started (``tool/call``), the order their results come in, and how many of them come (all,
    except perhaps in the last reply: its turn may still be running, or have crashed)."""

    names: tuple[str, ...]
    started: tuple[bool, ...]
    result_order: tuple[int, ...]
    answered: int


@st.composite
def reply_specs(draw: st.DrawFn) -> list[ReplySpec]:
    replies: list[ReplySpec] = []
    count = draw(st.integers(1, 6))
    for index in range(count):
        k = draw(st.integers(0, 3))
        names = tuple(draw(st.sampled_from(TOOL_NAMES)) for _ in range(k))
        started = tuple(draw(st.booleans()) for _ in range(k))
        order = tuple(draw(st.permutations(range(k))))
        answered = k if index < count - 1 else draw(st.integers(0, k))
        replies.append(ReplySpec(names, started, order, answered))
    return replies


@dataclasses.dataclass
class BuiltLog:
    session: Session
    answers: dict[int, int | None] = dataclasses.field(default_factory=dict)
    """Per result seq, the seq of the ``tool/call`` it answers by position (its own reply's
    call of its id; None when that call was never logged as started)."""
    call_results: dict[int, int | None] = dataclasses.field(default_factory=dict)
    """Per ``tool/call`` seq, the seq of the result that answers it (None: none yet)."""
    unanswered: list[tuple[str, str, int, int | None]] = dataclasses.field(default_factory=list)
    """The calls without a result: (call id, name, step, seq of its tool/call or None)."""
    texts: dict[int, str] = dataclasses.field(default_factory=dict)
    """Per result seq, its text (unique in the log)."""


def build_log(store: EventStore, replies: Sequence[ReplySpec]) -> BuiltLog:
    """One open turn in a new session of ``store``: a prompt, then each reply as the loop logs
    it (its message, the ``tool/call`` of each started call, the results in ``result_order``)."""
    session = Session(store.create(cwd="/work/project"), clock=fixed_clock)
    built = BuiltLog(session)
    session.append(TurnStart(turn=1))
    session.append(user_message("go"))
    for step, reply in enumerate(replies, start=1):
        session.append(StepStart(turn=1, step=step))
        ids = [f"call_{i}" for i in range(len(reply.names))]
        blocks = [
            ToolCallBlock(id=call_id, name=name, arguments=f'{{"step":{step}}}')
            for call_id, name in zip(ids, reply.names, strict=True)
        ]
        message = assistant_message(f"reply {step}", tool_calls=blocks)
        session.append(AssistantMessage(turn=1, step=step, message=message))
        call_seqs: list[int | None] = []
        for block, started in zip(blocks, reply.started, strict=True):
            if not started:
                call_seqs.append(None)
                continue
            call = ToolCall(
                turn=1, step=step, call_id=block.id, name=block.name, arguments=block.arguments
            )
            seq = session.append(call).seq
            call_seqs.append(seq)
            built.call_results[seq] = None
        for position, i in enumerate(reply.result_order):
            if position >= reply.answered:
                built.unanswered.append((ids[i], reply.names[i], step, call_seqs[i]))
                continue
            text = f"output of step {step} call {i}"
            result = ToolResult(turn=1, step=step, message=tool_result_message(ids[i], text))
            cites = [call_seqs[i]] if call_seqs[i] is not None else None
            seq = session.append(result, source_event_seqs=cites).seq
            built.answers[seq] = call_seqs[i]
            built.texts[seq] = text
            if call_seqs[i] is not None:
                built.call_results[call_seqs[i]] = seq
        if step < len(replies):
            session.append(StepEnd(turn=1, step=step))
    built.unanswered.sort(key=lambda c: (c[2], int(c[0].removeprefix("call_"))))
    return built
