"""The recallable backend through the real loop (docs/compaction.md, "Layout" and "Failure
handling")."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.agent.hooks import compaction_hooks
from dsh.compaction import (
    CompactionEngine,
    CompactionError,
    CompactionRefused,
    ExtractiveSummarizer,
    RecallableBackend,
    SummaryOutput,
)
from dsh.config import CompactionSettings
from dsh.events import (
    CompactionPlanEvent,
    CompactionSummaryEvent,
    ToolResult,
    encode_json,
    event_type_of,
    is_checkpoint_event,
)
from dsh.store import JsonlStore, MemoryStore
from dsh.surface import Session, checkpoint_kind
from tests.agent.conftest import Harness, run
from tests.helpers import append_chat_turn, append_tool_turn, new_session

SETTINGS = CompactionSettings(
    backend="recallable",
    threshold_ratio=0.8,
    retain_tokens=300,
    chunk_tokens=400,
    stub_tokens=100,
    state_max_tokens=300,
    stub_region_ratio=0.3,  # the rollup tests size their windows for a 30% stub share
)
FOOTER = re.compile(
    r"\[checkpoint c(\d+): shadows conversation span #(\d+)–#(\d+); "
    r"originals retrievable via history_read\]\Z"
)


def engine_for(session: Session, summarizer=None, settings=SETTINGS) -> CompactionEngine:
    ids = itertools.count(1)
    backend = RecallableBackend(summarizer or ExtractiveSummarizer(), settings)
    return CompactionEngine(session, backend, settings, new_id=lambda: f"p{next(ids)}")


def layout(session: Session) -> list[str]:
    """'index' / 'state' / 'tail' per current node."""
    return [checkpoint_kind(session, seq) or "tail" for seq in session.nodes]


def assert_layout(session: Session) -> None:
    kinds = layout(session)
    stubs = kinds.count("index")
    assert kinds[:stubs] == ["index"] * stubs, kinds
    assert kinds[stubs] == "state", kinds
    assert "index" not in kinds[stubs + 1 :] and "state" not in kinds[stubs + 1 :], kinds


def test_passes_through_the_loop_keep_stubs_frozen_and_the_state_last(harness: Harness):
    filler = "the build log says step {i} finished; value_{i} = {v} and path src/mod_{i}.py "
    script = []
    for i in range(60):
        if i % 2 == 0:
            script.append({"toolCalls": [{"name": "list_dir", "arguments": {}}]})
        else:
            script.append({"text": (filler * 3).format(i=i, v=i * 7)})
    agent = harness.agent(script, context_window=2600)
    engine = engine_for(harness.session)
    pre_step, overflow = compaction_hooks(engine)
    agent.pre_step_hooks.append(pre_step)
    agent.overflow_handler = overflow
    seen_stubs: dict[int, tuple[int, bytes]] = {}  # checkpoint seq -> (position, bytes)
    passes = rollups = 0
    for i in range(30):
        run(agent.run_turn(f"task {i}: " + (filler * 4).format(i=i, v=i)))
        plans = [e for e in harness.session.events if isinstance(e, CompactionPlanEvent)]
        rolled = {
            s for p in plans for r in p.data.regions if r.model == "rollup" for s in r.shadowed_seqs
        }
        if len(plans) > passes:
            passes = len(plans)
            assert_layout(harness.session)
        if len(rolled) > rollups:  # a rollup replaced the oldest stubs: later ones moved up
            rollups = len(rolled)
            seen_stubs = {k: v for k, v in seen_stubs.items() if k not in rolled}
            seen_stubs = {k: (harness.session.nodes.index(k), v[1]) for k, v in seen_stubs.items()}
        for position, seq in enumerate(harness.session.nodes):
            if checkpoint_kind(harness.session, seq) == "index":
                body = encode_json(harness.session.events[seq].data)
                if seq in seen_stubs:
                    assert seen_stubs[seq] == (position, body), "a frozen stub moved or changed"
                seen_stubs[seq] = (position, body)
        # a stub leaves the surface only inside a rollup
        gone = {s for s in seen_stubs if s not in harness.session.nodes}
        assert not gone, gone
    assert passes >= 6, f"only {passes} passes"


def long_session(store=None, turns: int = 8) -> Session:
    session = new_session(store or MemoryStore())
    for i in range(turns):
        append_tool_turn(
            session,
            f"step {i}: check ZEBRA-{7700 + i} in src/mod_{i}.py",
            calls=[("read_file", f'{{"path":"src/mod_{i}.py"}}', f"line {i}\n" * 60)],
            final=f"mod_{i} uses port {8000 + i}",
        )
    return session


def test_a_manual_pass_lands_stubs_then_the_state_with_exact_footers():
    session = long_session()
    result = run(engine_for(session).compact_now(window=100_000))
    assert result is not None and len(result.checkpoints) >= 2
    assert [c.kind for c in result.checkpoints][-1] == "state"
    assert_layout(session)
    for ref in result.checkpoints:
        text = session.events[ref.checkpoint_seq].data.text()
        assert FOOTER.search(text) and f"c{ref.summary_seq}:" in text
    state = session.events[result.checkpoints[-1].summary_seq]
    assert state.data.input_range[0] == result.checkpoints[0].shadowed_seqs[0]


def test_the_stub_keyword_line_holds_the_slice_rarest_literal():
    session = long_session()
    result = run(engine_for(session).compact_now(window=100_000))
    first_stub = session.events[result.checkpoints[0].summary_seq]
    assert "Keywords" in first_stub.data.summary
    assert "ZEBRA-7700" in first_stub.data.summary


class FailingSummarizer:
    """Fails the calls of some task kinds. A different route from the conversation's (compact
    layout); with ``pass`` among the kinds, the one-call pass fails and each stub and the state
    get a call of their own."""

    name = model = "failing"
    route = ("failing", "failing")

    def __init__(self, fail_kinds):
        self.fail_kinds = fail_kinds

    async def summarize(self, task):
        if task.kind in self.fail_kinds:
            raise RuntimeError(f"{task.kind} call failed")
        return await ExtractiveSummarizer().summarize(task)


def test_a_failed_stub_call_degrades_to_a_pointer_stub_and_the_pass_lands():
    session = long_session()
    result = run(
        engine_for(session, FailingSummarizer({"pass", "stub"})).compact_now(window=100_000)
    )
    summaries = [session.events[c.summary_seq].data for c in result.checkpoints]
    assert all(s.degraded == "fallback" for s in summaries if s.kind == "index")
    assert summaries[-1].kind == "state" and summaries[-1].degraded is None


def test_a_failed_state_rewrite_commits_nothing():
    session = long_session()
    nodes = list(session.nodes)
    with pytest.raises(CompactionError, match="state call failed"):
        run(engine_for(session, FailingSummarizer({"pass", "state"})).compact_now(window=100_000))
    assert session.nodes == nodes
    assert not any(isinstance(e, CompactionPlanEvent) for e in session.events)


def append_recall_steps(session: Session, steps: int) -> None:
    """One turn in which the model only calls history_search, step after step."""
    from dsh.events import AssistantMessage, StepEnd, StepStart, TurnEnd, TurnEndReason, TurnStart
    from tests.helpers import assistant_message, tool_call_block, tool_result_message, user_message

    session.append(TurnStart(turn=50))
    session.append(StepStart(turn=50, step=1))
    session.append(user_message("what did we decide about the port?"))
    for step in range(1, steps + 1):
        if step > 1:
            session.append(StepStart(turn=50, step=step))
        call = tool_call_block(f"rc{step}", "history_search", f'{{"query":"port {step}"}}')
        session.append(
            AssistantMessage(turn=50, step=step, message=assistant_message(tool_calls=[call]))
        )
        session.append(
            ToolResult(turn=50, step=step, message=tool_result_message(call.id, "hit " * 120))
        )
        session.append(StepEnd(turn=50, step=step))
    session.append(TurnEnd(turn=50, reason=TurnEndReason(kind="completed")))


def test_a_recall_only_slice_gets_a_code_only_pointer_stub():
    session = new_session(MemoryStore())
    append_recall_steps(session, 12)
    for i in range(3):
        append_tool_turn(session, f"work {i}", calls=[("read_file", "{}", "data " * 80)])
    backend = RecallableBackend(ExtractiveSummarizer(), SETTINGS)
    plan = backend.plan(session, retain_tokens=100, focus=None, reason="manual")
    assert plan is not None
    pointers = [r for r in plan.regions if r.kind == "index" and r.task is None]
    assert pointers
    result = run(engine_for(session).run_pass(plan, turn=None))
    degraded = [session.events[c.summary_seq].data.degraded for c in result.checkpoints]
    assert "pointer" in degraded
    assert_layout(session)


class HugeSummarizer:
    name = model = "huge"

    async def summarize(self, task):
        lead = "## Goal\n" if task.kind == "state" else ""  # a state must have its sections
        return SummaryOutput(text=lead + "padding " * 30_000, provider="huge", model="huge")


class WordySummarizer:
    """Answers every task with a stub just inside the junk limit: valid, but bigger than the
    tiny slices it indexes."""

    name = model = "wordy"

    def __init__(self) -> None:
        self.calls = 0

    async def summarize(self, task):
        self.calls += 1
        lead = "## Goal\n" if task.kind == "state" else ""  # a state must have its sections
        return SummaryOutput(text=lead + "wordy " * 95, provider="wordy", model="wordy")


TINY = CompactionSettings(
    backend="recallable", retain_tokens=40, chunk_tokens=200, stub_tokens=50, state_max_tokens=100
)


def test_the_guard_refuses_a_pass_that_would_grow_the_context():
    session = new_session(MemoryStore())
    for i in range(4):  # slices well under what a wordy stub and its framing cost
        append_tool_turn(session, f"s{i}", calls=[("read_file", "{}", f"v{i} " * 40)])
    nodes = list(session.nodes)
    summarizer = WordySummarizer()
    with pytest.raises(CompactionRefused, match="inflation guard: "):
        run(engine_for(session, summarizer, TINY).compact_now(window=100_000))
    assert summarizer.calls > 0  # refused after summarising: the answers were too long
    assert session.nodes == nodes


def test_no_model_is_called_when_even_the_shortest_checkpoints_could_not_shrink():
    session = new_session(MemoryStore())
    for i in range(4):
        append_chat_turn(session, f"hi {i}", "ok")
    nodes, events = list(session.nodes), len(session.events)
    summarizer = WordySummarizer()
    with pytest.raises(CompactionRefused, match="before any model call"):
        run(engine_for(session, summarizer, TINY).compact_now(window=100_000))
    assert summarizer.calls == 0
    assert session.nodes == nodes and len(session.events) == events  # not even a lock


def test_a_junk_stub_answer_degrades_to_a_pointer_and_the_pass_lands():
    session = long_session()
    result = run(engine_for(session, HugeSummarizer(), SETTINGS).compact_now(window=100_000))
    assert result is not None
    stubs = [session.events[c.summary_seq] for c in result.checkpoints if c.kind == "index"]
    assert stubs and all(s.data.degraded == "fallback" for s in stubs)
    assert_layout(session)


def test_a_later_pass_never_puts_an_old_stub_inside_its_region():
    session = long_session()
    engine = engine_for(session)
    first = run(engine.compact_now(window=100_000))
    old_stubs = {c.checkpoint_seq for c in first.checkpoints if c.kind == "index"}
    for i in range(8, 14):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    second = run(engine.compact_now(window=100_000))
    for ref in second.checkpoints:
        assert not old_stubs & set(ref.shadowed_seqs)
    old_state = first.checkpoints[-1].checkpoint_seq
    assert any(old_state in ref.shadowed_seqs for ref in second.checkpoints)
    assert_layout(session)


CRASHER = """
import asyncio, itertools, os, sys
from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from dsh.config import CompactionSettings
from dsh.store import JsonlStore
from dsh.surface import Session
settings = CompactionSettings(backend="recallable", retain_tokens=300, chunk_tokens=400,
                              stub_tokens=100, state_max_tokens=300)
session = Session.open(JsonlStore(sys.argv[1]), sys.argv[2], writable=True)
ids = itertools.count(1)
crash_at = int(sys.argv[3])
engine = CompactionEngine(session, RecallableBackend(ExtractiveSummarizer(), settings), settings,
                          new_id=lambda: f"p{next(ids)}",
                          on_commit=lambda n: os._exit(137) if n == crash_at else None)
asyncio.run(engine.compact_now(window=100_000))
"""


@pytest.mark.parametrize("crash_at", [1, 2, 3])
def test_a_kill_between_commits_is_completed_from_the_plan_to_the_same_layout(
    tmp_path: Path, crash_at: int
):
    store = JsonlStore(tmp_path / "crashed")
    session = long_session(store)
    session_id = session.id
    session.close()
    child = subprocess.run(
        [sys.executable, "-c", CRASHER, str(tmp_path / "crashed"), session_id, str(crash_at)],
        timeout=60,
    )
    assert child.returncode == 137
    reopened = Session.open(store, session_id, writable=True)
    engine = engine_for(reopened, _NoModel())
    assert engine.incomplete_plan() is not None
    engine.resume_incomplete(turn=None)
    assert engine.incomplete_plan() is None
    assert_layout(reopened)

    clean = long_session()
    run(engine_for(clean).compact_now(window=100_000))
    assert checkpoint_bodies(reopened) == checkpoint_bodies(clean)
    assert layout(reopened) == layout(clean)


def checkpoint_bodies(session: Session) -> list[str | None]:
    """Checkpoint texts without their footers (seqs differ between runs), None for tail nodes."""
    return [
        FOOTER.sub("", session.events[q].data.text())
        if is_checkpoint_event(session.events[q])
        else None
        for q in session.nodes
    ]


class _NoModel:
    name = model = "no-model"

    async def summarize(self, task):
        raise AssertionError("resume must not call the summariser")


def test_a_pass_commits_one_bracket_per_region_left_to_right_stubs_then_state():
    session = long_session()
    before = len(session.events)
    run(engine_for(session).compact_now(window=100_000))
    summaries = [e for e in session.events[before:] if isinstance(e, CompactionSummaryEvent)]
    n = len(summaries)
    assert n >= 2
    bracket = ["compaction/summary", "user/message", "compaction/end"]
    expected = ["compaction/start", "compaction/plan", *bracket]
    expected += ["compaction/start", *bracket] * (n - 1)
    assert [event_type_of(e) for e in session.events[before:]] == expected
    assert [s.data.kind for s in summaries] == ["index"] * (n - 1) + ["state"]
    firsts = [s.data.shadowed_seqs[0] for s in summaries]
    assert firsts == sorted(firsts)
