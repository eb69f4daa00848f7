"""Builders shared by the offline tests: messages, whole turns, checkpoints and a fixed clock.

Every builder goes through the public ``Session`` API, so a log built here is a log the harness
could have written.
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dsh.events import (
    AssistantMessage,
    CompactionEnd,
    CompactionStart,
    CompactionSummary,
    Message,
    ModelSource,
    PluginSource,
    ReasoningBlock,
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
    TurnStartEvent,
    Usage,
    UserSource,
    model_message,
)
from dsh.store import EventStore, JsonlStore, SqliteStore
from dsh.surface import Session, message_tokens

FIXED_TIME = 1_790_000_000_000
"""Epoch milliseconds used by every deterministic test clock (2026-09-21)."""

PROVIDER = "fake"
MODEL = "fake-model"

_ids = itertools.count(1)


def fixed_clock() -> int:
    return FIXED_TIME


def _next_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids)}"


# ---- messages -------------------------------------------------------------------------------


def user_message(text: str, *, id: str | None = None) -> Message:
    """A prompt typed by a person."""
    return Message(
        id=id or _next_id("u"), role="user", content=(TextBlock(text=text),), source=UserSource()
    )


def tool_call_block(
    call_id: str, name: str = "read_file", arguments: str = '{"path":"a.txt"}'
) -> ToolCallBlock:
    return ToolCallBlock(id=call_id, name=name, arguments=arguments)


def assistant_message(
    text: str = "",
    *,
    tool_calls: Sequence[ToolCallBlock] = (),
    reasoning: str | None = None,
    id: str | None = None,
) -> Message:
    """An assistant message; with no text, reasoning or calls it is empty (content ``()``)."""
    content: list[TextBlock | ReasoningBlock | ToolCallBlock] = []
    if reasoning is not None:
        content.append(ReasoningBlock(text=reasoning))
    if text:
        content.append(TextBlock(text=text))
    content.extend(tool_calls)
    return Message(
        id=id or _next_id("a"),
        role="assistant",
        content=tuple(content),
        source=ModelSource(provider=PROVIDER, model=MODEL),
    )


def tool_result_message(
    call_id: str, text: str, *, is_error: bool = False, id: str | None = None
) -> Message:
    """The role-``tool`` message answering one call: exactly one tool-result block."""
    return Message(
        id=id or _next_id("r"),
        role="tool",
        content=(
            ToolResultBlock(
                tool_call_id=call_id, content=(TextBlock(text=text),), is_error=is_error
            ),
        ),
        source=ToolSource(call_id=call_id),
    )


def checkpoint_message(text: str, compaction_id: str, *, id: str | None = None) -> Message:
    """A compaction checkpoint: a user message whose source is the ``compact`` plugin."""
    return Message(
        id=id or _next_id("c"),
        role="user",
        content=(TextBlock(text=text),),
        source=PluginSource(plugin="compact", compaction_id=compaction_id),
    )


# ---- sessions and turns ---------------------------------------------------------------------


def new_session(store: EventStore, *, cwd: str = "/work/project") -> Session:
    """A fresh writable session on ``store`` with the fixed clock."""
    return Session(store.create(cwd=cwd), clock=fixed_clock)


def next_turn(session: Session) -> int:
    """The number the next turn gets (1 for a new session)."""
    return 1 + sum(isinstance(e, TurnStartEvent) for e in session.events)


@dataclass
class TurnSeqs:
    """Seqs of the events one turn wrote (surface nodes and the log-only ones worth citing)."""

    turn: int
    turn_start: int = -1
    user: int = -1
    assistants: list[int] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    """Seqs of the ``tool/call`` events, in call order."""
    results: list[int] = field(default_factory=list)
    """Seqs of the ``tool/result`` events, in call order."""
    turn_end: int = -1

    @property
    def surface(self) -> list[int]:
        """The surface nodes this turn appended, in log order."""
        return sorted([self.user, *self.assistants, *self.results])


def append_chat_turn(
    session: Session, prompt: str = "hello", reply: str = "hi there", *, usage: Usage | None = None
) -> TurnSeqs:
    """A closed one-step turn without tools: user prompt, assistant reply."""
    turn = next_turn(session)
    seqs = TurnSeqs(turn)
    seqs.turn_start = session.append(TurnStart(turn=turn)).seq
    session.append(StepStart(turn=turn, step=1))
    seqs.user = session.append(user_message(prompt)).seq
    seqs.assistants.append(
        session.append(
            AssistantMessage(turn=turn, step=1, message=assistant_message(reply), usage=usage)
        ).seq
    )
    session.append(StepEnd(turn=turn, step=1))
    seqs.turn_end = session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed"))).seq
    return seqs


def append_tool_turn(
    session: Session,
    prompt: str = "list the files",
    calls: Sequence[tuple[str, str, str]] = (("read_file", '{"path":"a.txt"}', "contents of a"),),
    final: str = "done",
    *,
    usage: Usage | None = None,
    final_usage: Usage | None = None,
) -> TurnSeqs:
    """A closed two-step turn: the model asks for ``calls`` (name, arguments, result text) in
    parallel, every call runs and answers, then the model replies ``final``."""
    turn = next_turn(session)
    seqs = TurnSeqs(turn)
    seqs.turn_start = session.append(TurnStart(turn=turn)).seq
    session.append(StepStart(turn=turn, step=1))
    seqs.user = session.append(user_message(prompt)).seq
    blocks = [tool_call_block(_next_id("call"), name, args) for name, args, _ in calls]
    seqs.assistants.append(
        session.append(
            AssistantMessage(
                turn=turn, step=1, message=assistant_message(tool_calls=blocks), usage=usage
            )
        ).seq
    )
    for block, (_, _, output) in zip(blocks, calls, strict=True):
        call = session.append(
            ToolCall(
                turn=turn, step=1, call_id=block.id, name=block.name, arguments=block.arguments
            )
        )
        seqs.calls.append(call.seq)
        seqs.results.append(
            session.append(
                ToolResult(turn=turn, step=1, message=tool_result_message(block.id, output)),
                source_event_seqs=[call.seq],
            ).seq
        )
    session.append(StepEnd(turn=turn, step=1))
    session.append(StepStart(turn=turn, step=2))
    seqs.assistants.append(
        session.append(
            AssistantMessage(turn=turn, step=2, message=assistant_message(final), usage=final_usage)
        ).seq
    )
    session.append(StepEnd(turn=turn, step=2))
    seqs.turn_end = session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed"))).seq
    return seqs


def replace_with_checkpoint(
    session: Session,
    start: int,
    end: int,
    text: str = "<compacted-summary>earlier work</compacted-summary>",
    *,
    compaction_id: str = "cmp-test",
    extra_sources: Sequence[int] = (),
) -> int:
    """Replace the surface span ``start``..``end`` with a checkpoint citing exactly what it
    shadows (plus ``extra_sources`` first); returns the checkpoint's seq."""
    first, last = session.surface.position(start), session.surface.position(end)
    shadowed = session.nodes[first : last + 1]
    return session.append(
        checkpoint_message(text, compaction_id),
        surface_op=ReplaceOp(start=start, end=end),
        source_event_seqs=[*extra_sources, *shadowed],
    ).seq


def heuristic_price(session: Session, seqs: Sequence[int]) -> int:
    """The heuristic price of the messages behind ``seqs`` (docs/architecture.md, "Token
    accounting")."""
    total = 0
    for seq in seqs:
        message = model_message(session.events[seq])  # type: ignore[arg-type]
        total += 0 if message is None else message_tokens(message)
    return total


def compaction_bracket(
    session: Session,
    shadowed: Sequence[int],
    summary: str,
    *,
    compaction_id: str = "cmp-1",
    turn: int | None = None,
    checkpoint_id: str | None = None,
) -> tuple[int, int, int, int]:
    """A basic (state) compaction of the contiguous surface span ``shadowed``: start → summary
    → checkpoint replace → end. Returns the four seqs."""
    start = session.append(CompactionStart(compaction_id=compaction_id, turn=turn)).seq
    summary_seq = session.append(
        CompactionSummary(
            compaction_id=compaction_id,
            kind="state",
            summary=summary,
            shadowed_range=(shadowed[0], shadowed[-1]),
            shadowed_seqs=tuple(shadowed),
            shadowed_token_count=heuristic_price(session, shadowed),
            provider=PROVIDER,
            model=MODEL,
        )
    ).seq
    checkpoint = session.append(
        checkpoint_message(summary, compaction_id, id=checkpoint_id),
        surface_op=ReplaceOp(start=shadowed[0], end=shadowed[-1]),
        source_event_seqs=[start, summary_seq, *shadowed],
    ).seq
    end = session.append(CompactionEnd(compaction_id=compaction_id, turn=turn)).seq
    return start, summary_seq, checkpoint, end


def surface_state(session: Session) -> tuple[list[int], list[object], int, int]:
    """Everything an invalid append must leave unchanged: nodes, replacements, generation and
    the number of events."""
    return (
        list(session.nodes),
        list(session.replacements),
        session.replace_generation,
        len(session.events),
    )


# ---- another process ------------------------------------------------------------------------

_HOLDER = """
import sys, time
from pathlib import Path
from dsh.store import open_store
home, backend, session_id, *argv = sys.argv[1:]
sys.argv = argv or sys.argv  # what the lock file says holds it (dsh.store.locking.holder_label)
log = open_store(Path(home), backend).open(session_id, writable=True)
print("ready", flush=True)
time.sleep(120)
"""


KILLED_HOLDER = 4194305
"""A pid past the kernel's range (no process has it): what a killed writer leaves in its lock."""


def leave_lock_of_a_killed_writer(store: JsonlStore | SqliteStore, session_id: str) -> None:
    """Make the session's lock file record a holder that never released it, as a killed writer
    leaves it (``WriteLock.unclean_holder``): a log cut by hand is then one a crash left."""
    store.lock_path(session_id).write_text(f"{KILLED_HOLDER}\n")


@contextlib.contextmanager
def writer_in_child_process(
    home: Path, backend: str, session_id: str, argv: Sequence[str] = ()
) -> Iterator[int]:
    """A child process that holds ``session_id`` open for writing; yields its pid and kills it
    on exit. ``argv``: the command line it takes for its own (``["dsh", "web"]`` labels the lock
    as a ``dsh web`` does)."""
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(home), backend, session_id, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        ready = child.stdout.readline().strip()
        if ready != "ready":
            child.kill()
            _, err = child.communicate(timeout=10)
            raise AssertionError(f"child did not take the lock: {err}")
        yield child.pid
    finally:
        child.kill()
        child.wait(timeout=10)


def run_session_id(stderr: str | bytes) -> str:
    """The session id ``dsh run`` names on stderr (``session: ID``, before its first turn)."""
    text = stderr.decode() if isinstance(stderr, bytes) else stderr
    for line in text.splitlines():
        if line.startswith("session: "):
            return line.removeprefix("session: ")
    raise AssertionError(f"no session line on stderr: {text!r}")
