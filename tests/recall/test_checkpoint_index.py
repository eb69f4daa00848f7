"""Checkpoints found through the session's per-type index are the ones a walk of the log finds,
after any sequence of appends, and the recall tools, handed that index by the loop, no longer
walk the log to find them."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.agent import Agent, AgentConfig, system_prompt
from dsh.bench.runner import BENCH_ENVIRONMENT
from dsh.events import (
    CompactionEnd,
    CompactionEndEvent,
    CompactionStart,
    CompactionStartEvent,
    CompactionSummary,
    CompactionSummaryEvent,
    Event,
    ReplaceOp,
    UserMessageEvent,
    is_checkpoint_event,
)
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.recall import (
    HistoryReadTool,
    HistorySearchTool,
    RecallError,
    list_checkpoints,
    resolve_checkpoint,
)
from dsh.store import JsonlStore, MemoryStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext, ToolKind, ToolOutput
from dsh.tools.registry import ToolRegistry
from tests.helpers import (
    MODEL,
    PROVIDER,
    append_chat_turn,
    checkpoint_message,
    new_session,
)
from tests.recall.builders import NEEDLE, two_passes

OPS = ["chat", "chat", "bracket", "start", "summary", "replace", "end", "fail", "reopen"]
"""``bracket`` writes a whole one (start, summary, replace, end), as a pass does; the others
write one part each, so brackets interleave, reuse ids, break and end late or never."""
IDS = ["a", "b"]
INDEXED = (CompactionStartEvent, CompactionSummaryEvent, CompactionEndEvent, UserMessageEvent)


def _reference(events: Sequence[Event]) -> list[tuple[int, int, int, int]]:
    """The completed checkpoints by the rule of ``dsh.recall.checkpoints``, walked as its words
    say: for each summary, the nearest earlier start and the nearest later end of its
    compaction, an end without an error, and a checkpoint replace citing the summary before
    that end. As (start, summary, node, end) seqs."""
    found = []
    for summary in events:
        if not isinstance(summary, CompactionSummaryEvent):
            continue
        cid = summary.data.compaction_id
        starts = [
            e
            for e in events[: summary.seq]
            if isinstance(e, CompactionStartEvent) and e.data.compaction_id == cid
        ]
        ends = [
            e
            for e in events[summary.seq + 1 :]
            if isinstance(e, CompactionEndEvent) and e.data.compaction_id == cid
        ]
        if not starts or not ends or ends[0].data.error is not None:
            continue
        nodes = [
            e
            for e in events[summary.seq + 1 : ends[0].seq]
            if is_checkpoint_event(e) and summary.seq in (e.source_event_seqs or ())
        ]
        if nodes:
            found.append((starts[-1].seq, summary.seq, nodes[0].seq, ends[0].seq))
    return found


def _seqs(session: Session, indexed: bool) -> list[tuple[int, int, int, int]]:
    listed = list_checkpoints(session.events, session if indexed else None)
    return [(c.start.seq, c.summary.seq, c.node.seq, c.end.seq) for c in listed]


def _resolved(session: Session, seq: int, indexed: bool) -> object:
    try:
        return resolve_checkpoint(session.events, f"c{seq}", session if indexed else None)
    except RecallError as error:
        return error.code, error.message


def _apply(session: Session, op: str, cid: str, pick: int) -> None:
    if op == "bracket":
        for part in ("start", "summary", "replace", "end"):
            _apply(session, part, cid, 0)
        return
    nodes = session.nodes
    summaries = session.of_type(CompactionSummaryEvent)
    if op == "chat":
        append_chat_turn(session, f"q{len(session.events)}", f"a{len(session.events)}")
    elif op == "start":
        session.append(CompactionStart(compaction_id=cid, turn=None))
    elif op == "summary" and nodes:
        shadowed = tuple(nodes[-2:])
        session.append(
            CompactionSummary(
                compaction_id=cid,
                summary="s",
                shadowed_range=(shadowed[0], shadowed[-1]),
                shadowed_seqs=shadowed,
                shadowed_token_count=1,
                provider=PROVIDER,
                model=MODEL,
            )
        )
    elif op == "replace" and nodes and summaries:
        shadowed = tuple(nodes[-1 - pick % 2 :])
        cited = summaries[-1 - pick % len(summaries)].seq
        session.append(
            checkpoint_message(f"checkpoint of {cid}", cid),
            surface_op=ReplaceOp(start=shadowed[0], end=shadowed[-1]),
            source_event_seqs=(cited, *shadowed),
        )
    elif op in ("end", "fail"):
        error = "boom" if op == "fail" else None
        session.append(CompactionEnd(compaction_id=cid, turn=None, error=error))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(OPS), st.sampled_from(IDS), st.integers(0, 3)),
        min_size=4,
        max_size=40,
    )
)
def test_checkpoints_found_through_the_index_equal_a_walk_of_the_log_after_any_appends(ops):
    with tempfile.TemporaryDirectory() as home:
        store = JsonlStore(Path(home))
        session = new_session(store)
        try:
            for op, cid, pick in ops:
                if op == "reopen":  # the index is built again from the loaded log
                    session.close()
                    session = Session.open(store, session.id, writable=True)
                else:
                    _apply(session, op, cid, pick)
                events = session.events
                for kind in INDEXED:
                    assert list(session.of_type(kind)) == [e for e in events if type(e) is kind]
                expected = _reference(events)
                assert _seqs(session, indexed=True) == expected == _seqs(session, indexed=False)
            for seq in range(len(session.events) + 1):
                assert _resolved(session, seq, indexed=True) == _resolved(session, seq, False)
        finally:
            session.close()


class _Unread(Sequence[Event]):
    """A log whose length may be asked but none of whose events may be read."""

    def __init__(self, events: Sequence[Event]) -> None:
        self._events = events

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, index: Any) -> Any:
        raise AssertionError("the log was read")


class _Unwalked(Sequence[Event]):
    """A log whose events may be read by seq, but that may not be walked or sliced."""

    def __init__(self, events: Sequence[Event]) -> None:
        self._events = events

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, index: Any) -> Any:
        if not isinstance(index, int):
            raise AssertionError("the log was sliced")
        return self._events[index]

    def __iter__(self) -> Iterator[Event]:
        raise AssertionError("the log was walked")


def test_listing_checkpoints_with_the_index_reads_no_event_of_the_log():
    session = two_passes().session
    listed = list_checkpoints(_Unread(session.events), session)
    assert listed == list_checkpoints(session.events)
    assert len(listed) == 4


def _context(events: Sequence[Event], session: Session, *, indexed: bool) -> ToolContext:
    return ToolContext(
        workspace=Path("/tmp"),
        session_id=session.id,
        call_id="call-1",
        history=events,
        history_index=session if indexed else None,
    )


def test_the_recall_tools_given_the_index_answer_as_before_without_walking_the_log():
    passes = two_passes()
    session = passes.session
    calls: list[tuple[Any, dict[str, Any]]] = [
        (HistorySearchTool(), {"query": NEEDLE}),
        (HistorySearchTool(), {"query": "users", "checkpoint": passes.index1.id}),
        (HistorySearchTool(), {"query": "x", "checkpoint": "c99999"}),
        (HistoryReadTool(), {"checkpoint": passes.state1.id}),
        (HistoryReadTool(), {"checkpoint": f"c{passes.state1.start}"}),
    ]
    for tool, arguments in calls:
        walked = asyncio.run(tool.run(arguments, _context(session.events, session, indexed=False)))
        unwalked = _Unwalked(session.events)
        indexed = asyncio.run(tool.run(arguments, _context(unwalked, session, indexed=True)))
        assert indexed == walked


class _Capture:
    name = "capture"
    kind: ToolKind = "read"
    description = "Remembers the context it was called with."

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = {"type": "object", "properties": {}}
        self.contexts: list[ToolContext] = []

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.contexts.append(ctx)
        return ToolOutput("ok")


def test_the_loop_hands_its_tools_the_sessions_index_with_the_log(tmp_path):
    session = new_session(MemoryStore())
    capture = _Capture()
    script = [{"text": "look", "toolCalls": [{"name": "capture", "arguments": {}}]}, {"text": "ok"}]
    agent = Agent(
        session,
        ScriptedProvider(parse_script(script), model="scripted"),
        ToolRegistry([capture]),
        ApprovalPolicy("auto"),
        config=AgentConfig(
            provider="scripted",
            model="scripted",
            system=system_prompt(tmp_path, BENCH_ENVIRONMENT),
            context_window=128_000,
        ),
        workspace=tmp_path,
    )
    assert asyncio.run(agent.run_turn("go")).reason == "completed"
    (ctx,) = capture.contexts
    assert ctx.history is session.events
    assert ctx.history_index is session
