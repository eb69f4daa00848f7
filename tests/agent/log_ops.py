"""Random appends to a session log for the folds' property tests: chat turns (one event at a time
or as one batch), tool turns, compaction passes of every checkpoint kind (their summaries billed
to a random provider), pruned results, header and route changes, failed calls, and reopening
(done by the caller: a new session object)."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import strategies as st

from dsh.events import (
    AssistantMessage,
    CompactionEnd,
    CompactionStart,
    CompactionSummary,
    ModelSource,
    ReplaceOp,
    RequestConfig,
    RequestContext,
    RequestError,
    RequestHeader,
    RequestHeaderBody,
    StepEnd,
    StepStart,
    ToolResult,
    ToolResultEvent,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    Usage,
)
from dsh.surface import Draft, Session
from tests.helpers import (
    append_tool_turn,
    assistant_message,
    heuristic_price,
    next_turn,
    replace_with_checkpoint,
    tool_result_message,
    user_message,
)

PROVIDERS = ("deepseek", "openai", "fake", "scripted")
TOOLS = ({"name": "read_file", "parameters": {"type": "object"}}, {"name": "bash"})

usages = st.none() | st.builds(
    Usage,
    input_tokens=st.integers(0, 5_000),
    output_tokens=st.integers(0, 500),
    cache_read_tokens=st.none() | st.integers(0, 5_000),
    cache_write_tokens=st.none() | st.integers(0, 500),
)
replies = st.sampled_from(["", "ok", "a longer reply that the preview cuts " * 5])
providers = st.sampled_from(PROVIDERS)
log_ops = st.one_of(
    st.tuples(st.sampled_from(["chat", "batch"]), providers, usages, replies),
    st.tuples(st.just("tool"), usages),
    st.tuples(
        st.just("compact"), st.sampled_from(["index", "state", "legacy", "bare"]), usages, providers
    ),
    st.tuples(st.sampled_from(["prune", "header", "error", "reopen"])),
    st.tuples(st.just("context"), providers),
)


def chat_turn(session: Session, provider: str, usage: Usage | None, reply: str) -> list[Draft]:
    turn = next_turn(session)
    message = msgspec.structs.replace(
        assistant_message(reply), source=ModelSource(provider=provider, model="m")
    )
    return [
        Draft(TurnStart(turn=turn)),
        Draft(StepStart(turn=turn, step=1)),
        Draft(user_message(f"question {turn}")),
        Draft(AssistantMessage(turn=turn, step=1, message=message, usage=usage)),
        Draft(StepEnd(turn=turn, step=1)),
        Draft(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed"))),
    ]


def compact(
    session: Session, kind: str, usage: Usage | None, name: str, provider: str = "deepseek"
) -> None:
    """Replace the surface up to its latest balanced cut (before the last node) with one
    checkpoint: a pass's bracket with an index, state or kind-less summary (written by
    ``provider``'s model ``m``), or a bare replace."""
    nodes = session.nodes
    cuts = [i for i, seq in enumerate(nodes[:-1]) if session.tool_pairing_balanced_after(seq)]
    if not cuts:
        return
    shadowed = nodes[: cuts[-1] + 1]
    if kind == "bare":
        replace_with_checkpoint(session, shadowed[0], shadowed[-1])
        return
    start = session.append(CompactionStart(compaction_id=name, turn=None)).seq
    summary = session.append(
        CompactionSummary(
            compaction_id=name,
            kind=None if kind == "legacy" else kind,  # type: ignore[arg-type]
            summary=f"{kind} summary",
            shadowed_range=(shadowed[0], shadowed[-1]),
            shadowed_seqs=tuple(shadowed),
            shadowed_token_count=heuristic_price(session, shadowed),
            provider=provider,
            model="m",
            usage=usage,
        )
    ).seq
    replace_with_checkpoint(
        session, shadowed[0], shadowed[-1], compaction_id=name, extra_sources=[start, summary]
    )
    session.append(CompactionEnd(compaction_id=name, turn=None))


def prune(session: Session) -> None:
    """Replace the newest tool result on the surface with a pruned copy."""
    results = [s for s in session.nodes if isinstance(session.events[s], ToolResultEvent)]
    if not results:
        return
    event = session.events[results[-1]]
    assert isinstance(event, ToolResultEvent)
    call_id = event.data.message.content[0].tool_call_id  # type: ignore[union-attr]
    session.append(
        ToolResult(turn=1, step=1, message=tool_result_message(call_id, "[pruned]")),
        surface_op=ReplaceOp(start=event.seq, end=event.seq),
        source_event_seqs=[event.seq],
    )


def apply_op(session: Session, op: tuple[Any, ...], step: int) -> None:
    name = op[0]
    if name == "chat":
        for draft in chat_turn(session, *op[1:]):
            session.append_many([draft])
    elif name == "batch":
        session.append_many(chat_turn(session, *op[1:]))
    elif name == "tool":
        append_tool_turn(session, usage=op[1], final_usage=op[1])
    elif name == "compact":
        compact(session, op[1], op[2], f"pass-{step}", op[3])
    elif name == "prune":
        prune(session)
    elif name == "header":
        config = RequestConfig(provider="deepseek", model="deepseek-chat")
        body = RequestHeaderBody(config=config, system=f"system {step} " * 10, tools=TOOLS)
        session.append(RequestHeader(header=body, reason="change"))
    elif name == "context":
        session.append(RequestContext(provider=op[1], model="m", context_window=32_000))
    elif name == "error":
        session.append(RequestError(turn=1, step=1, code="e", message="m", retryable=False))
