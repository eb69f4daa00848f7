"""Plan-then-commit with crash resume, keyless replay of a compacted session, and the property
that compaction never splits a tool call from its result."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.agent import Agent, AgentConfig
from dsh.agent.hooks import compaction_hooks
from dsh.compaction import (
    BasicBackend,
    CompactionEngine,
    CompactionRefused,
    ExtractiveSummarizer,
    ModelSummarizer,
)
from dsh.config import CompactionSettings
from dsh.events import (
    CompactionPlanEvent,
    CompactionSummaryEvent,
    encode_event,
    event_type_of,
    is_checkpoint_event,
)
from dsh.llm.replay import ReplayProvider
from dsh.llm.scripted import ScriptedProvider
from dsh.store import JsonlStore, MemoryStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.registry import ToolRegistry, default_tools
from tests.agent.conftest import run
from tests.helpers import append_tool_turn, fixed_clock, new_session

SETTINGS = CompactionSettings(backend="basic", retain_tokens=60)

CRASHER = """
import asyncio, os, sys
from dsh.compaction import BasicBackend, CompactionEngine, ExtractiveSummarizer
from dsh.config import CompactionSettings
from dsh.store import JsonlStore
from dsh.surface import Session
settings = CompactionSettings(backend="basic", retain_tokens=60)
session = Session.open(JsonlStore(sys.argv[1]), sys.argv[2], writable=True)
engine = CompactionEngine(session, BasicBackend(ExtractiveSummarizer(), settings), settings,
                          on_commit=lambda n: os._exit(137) if n == 1 else None)
asyncio.run(engine.compact_now(window=10_000))
"""


def test_a_kill_between_plan_and_commit_is_completed_at_the_next_pre_step(tmp_path: Path):
    store = JsonlStore(tmp_path)
    session = Session(store.create(cwd="/w"), clock=fixed_clock)
    for i in range(6):
        append_tool_turn(session, f"p{i}", calls=[("read_file", "{}", f"output {i} " * 80)])
    session_id = session.id
    session.close()
    child = subprocess.run([sys.executable, "-c", CRASHER, str(tmp_path), session_id], timeout=60)
    assert child.returncode == 137
    crashed = Session.open(store, session_id)
    types = [event_type_of(e) for e in crashed.events]
    assert types[-2:] == ["compaction/start", "compaction/plan"]
    assert not any(is_checkpoint_event(e) for e in crashed.events)

    reopened = Session.open(store, session_id, writable=True)
    engine = CompactionEngine(reopened, _no_model_backend(), SETTINGS)
    assert engine.incomplete_plan() is not None
    result = engine.resume_incomplete(turn=None)
    assert result is not None and len(result.checkpoints) == 1
    plan = next(e for e in reopened.events if isinstance(e, CompactionPlanEvent))
    summary = [e for e in reopened.events if isinstance(e, CompactionSummaryEvent)][-1]
    assert summary.data.summary == plan.data.regions[0].summary
    assert reopened.nodes[0] == result.checkpoints[0].checkpoint_seq
    assert engine.incomplete_plan() is None
    assert engine.live_orphan() is None  # the crashed start is dead after end-seed


class _NoModel:
    name = model = "must-not-be-called"

    async def summarize(self, task):
        raise AssertionError("resume must not call a summariser")


def _no_model_backend() -> BasicBackend:
    return BasicBackend(_NoModel(), SETTINGS)


SUMMARY_TEXT = "## Request and intent\n- inspect modules\n## Current state\n- done"


def _drive(store, provider, workspace: Path) -> Session:
    """Five turns against ``provider`` with a model summariser and a small window."""
    session = Session(store.create(cwd=str(workspace)), clock=fixed_clock)
    ids = itertools.count(1)
    backend = BasicBackend(ModelSummarizer(provider, "m", history=session.events), SETTINGS)
    engine = CompactionEngine(session, backend, SETTINGS, new_id=lambda: f"p{next(ids)}")
    pre_step, overflow = compaction_hooks(engine)
    agent = Agent(
        session,
        provider,
        ToolRegistry(default_tools()),
        ApprovalPolicy("auto"),
        config=AgentConfig(provider="scripted", model="m", system="sys", context_window=2000),
        workspace=workspace,
        pre_step_hooks=[pre_step],
        overflow_handler=overflow,
    )
    for i in range(5):
        run(agent.run_turn(f"question {i} " + "detail " * 120))
    return session


def test_a_recorded_session_with_a_model_summary_replays_to_identical_bytes(tmp_path: Path):
    entries = [{"text": f"answer {i} " + "words " * 100} for i in range(5)]
    scripted = ScriptedProvider(entries, summaries=[{"text": SUMMARY_TEXT}] * 5)
    recorded = _drive(MemoryStore(), scripted, tmp_path)
    summaries = [e for e in recorded.events if isinstance(e, CompactionSummaryEvent)]
    assert summaries and all(s.data.llm_stream_call and s.data.raw_output for s in summaries)
    replay = ReplayProvider(list(recorded.events), name="scripted", model="m")
    replayed = _drive(MemoryStore(), replay, tmp_path)
    assert [encode_event(e) for e in replayed.events] == [encode_event(e) for e in recorded.events]


@settings(max_examples=60, deadline=None)
@given(
    calls_per_turn=st.lists(st.integers(min_value=0, max_value=3), min_size=2, max_size=8),
    retain=st.integers(min_value=0, max_value=400),
)
def test_compaction_never_splits_a_tool_call_from_its_result(calls_per_turn, retain):
    session = new_session(MemoryStore())
    for n, count in enumerate(calls_per_turn):
        calls = [("read_file", json.dumps({"path": f"f{n}_{k}"}), "z" * 50) for k in range(count)]
        if calls:
            append_tool_turn(session, f"turn {n}", calls=calls)
        else:
            from tests.helpers import append_chat_turn

            append_chat_turn(session, f"turn {n}", "ok")
    backend = BasicBackend(ExtractiveSummarizer(), SETTINGS)
    plan = backend.plan(session, retain_tokens=retain, focus=None, reason="pressure")
    if plan is None:
        return
    shadowed = plan.regions[0].shadowed_seqs
    assert session.tool_pairing_balanced_before(shadowed[0])
    assert session.tool_pairing_balanced_after(shadowed[-1])
    engine = CompactionEngine(session, backend, SETTINGS)
    nodes = list(session.nodes)
    try:
        run(engine.run_pass(plan, turn=None))
    except CompactionRefused:  # the guard may refuse a tiny span; then nothing changed
        assert session.nodes == nodes
    assert session.tool_pairing_balanced_after(session.nodes[-1])
