"""What the engine says of a pass that did not finish: a ``/compact`` whose process died after
its plan is answered when a later step finishes the pass (once, ok or not), and a pressure pass
whose summariser failed is said as failed, not as "nothing can be compacted" (docs/compaction.md,
"Triggers" and "Failure handling")."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

from dsh.compaction import BasicBackend, CompactionEngine, ExtractiveSummarizer
from dsh.compaction.summarizer import SummaryOutput, SummaryTask
from dsh.config import CompactionSettings
from dsh.events import (
    CommandDoneEvent,
    CommandRunEvent,
    CompactionPlanEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    ReplaceOp,
    UserMessageEvent,
)
from dsh.store import JsonlStore, MemoryStore
from dsh.surface import Session
from tests.agent.conftest import run
from tests.helpers import append_tool_turn, fixed_clock, new_session, user_message

SETTINGS = CompactionSettings(backend="basic", retain_tokens=60)

KILLED_COMPACT = """
import asyncio, os, sys
from dsh.compaction import BasicBackend, CompactionEngine, ExtractiveSummarizer
from dsh.compaction.commands import run_compact_command
from dsh.config import CompactionSettings
from dsh.store import JsonlStore
from dsh.surface import Session
settings = CompactionSettings(backend="basic", retain_tokens=60)
session = Session.open(JsonlStore(sys.argv[1]), sys.argv[2], writable=True)
engine = CompactionEngine(session, BasicBackend(ExtractiveSummarizer(), settings), settings,
                          on_commit=lambda n: os._exit(137))
asyncio.run(run_compact_command(engine, window=10_000))
"""


def _killed_after_plan(tmp_path: Path) -> tuple[JsonlStore, str]:
    """A session whose ``/compact`` died right after its pass logged the plan."""
    store = JsonlStore(tmp_path)
    session = Session(store.create(cwd="/w"), clock=fixed_clock)
    for i in range(6):
        append_tool_turn(session, f"p{i}", calls=[("read_file", "{}", f"output {i} " * 80)])
    session.close()
    child = subprocess.run(
        [sys.executable, "-c", KILLED_COMPACT, str(tmp_path), session.id], timeout=60
    )
    assert child.returncode == 137
    return store, session.id


def _answers(session: Session) -> list[CommandDoneEvent]:
    return list(session.of_type(CommandDoneEvent))


def _is_prompt(session: Session, seq: int) -> bool:
    return isinstance(session.events[seq], UserMessageEvent)


def _engine(session: Session) -> CompactionEngine:
    return CompactionEngine(session, BasicBackend(ExtractiveSummarizer(), SETTINGS), SETTINGS)


def test_the_step_that_finishes_a_killed_compacts_pass_answers_that_compact_once(
    tmp_path: Path,
):
    store, session_id = _killed_after_plan(tmp_path)
    session = Session.open(store, session_id, writable=True)
    (command,) = session.of_type(CommandRunEvent)
    assert _answers(session) == []
    engine = _engine(session)
    assert engine.interrupted_command() == command.data.command_id
    # a turn's pre-step (no /compact of its own) finishes the pass and answers the command
    assert run(engine.compact_if_needed("pressure", turn=7, window=100_000)) is not None
    (done,) = _answers(session)
    summary = session.of_type(CompactionSummaryEvent)[-1]
    assert done.data.command_id == command.data.command_id and done.data.ok
    assert done.data.source_event_seq == summary.seq
    assert done.data.text == (
        f"Compacted {len(summary.data.shadowed_seqs)} history items "
        f"(~{summary.data.shadowed_token_count} tokens); finished from its plan after the "
        "session was reopened (the process running the pass had ended mid-pass)"
    )
    assert engine.interrupted_command() is None
    run(engine.compact_if_needed("pressure", turn=7, window=100_000))
    session.close()
    reopened = Session.open(store, session_id, writable=True)
    run(_engine(reopened).compact_now(window=100_000))  # a fresh engine reads it answered
    assert [d.data.command_id for d in _answers(reopened)] == [command.data.command_id]


def test_a_killed_compacts_plan_abandoned_on_resume_is_answered_not_ok(tmp_path: Path):
    store, session_id = _killed_after_plan(tmp_path)
    session = Session.open(store, session_id, writable=True)
    (plan,) = session.of_type(CompactionPlanEvent)
    # a hand edit: one node of the planned region replaced, so it is no longer one run
    prompts = [s for s in plan.data.regions[0].shadowed_seqs if _is_prompt(session, s)]
    session.append(
        user_message("edited"),
        surface_op=ReplaceOp(start=prompts[1], end=prompts[1]),
        source_event_seqs=[prompts[1]],
    )
    engine = _engine(session)
    assert engine.resume_incomplete(turn=None) is None
    (done,) = _answers(session)
    assert not done.data.ok and done.data.source_event_seq is None
    assert done.data.text == (
        "Compaction pass did not finish: plan abandoned on resume: region 1 is no longer one "
        "run of surface nodes (the process running the pass had ended mid-pass)"
    )
    assert engine.resume_incomplete(turn=None) is None
    assert len(_answers(session)) == 1


def test_an_automatic_pass_finished_from_its_plan_answers_no_command(tmp_path: Path):
    store = JsonlStore(tmp_path)
    session = Session(store.create(cwd="/w"), clock=fixed_clock)
    for i in range(6):
        append_tool_turn(session, f"p{i}", calls=[("read_file", "{}", f"output {i} " * 80)])
    engine = CompactionEngine(
        session,
        BasicBackend(ExtractiveSummarizer(), SETTINGS),
        SETTINGS,
        on_commit=lambda n: (_ for _ in ()).throw(RuntimeError("killed")),
    )
    with contextlib.suppress(RuntimeError):  # as if killed: nothing after the plan landed
        run(engine.compact_if_needed("pressure", turn=None, window=1_000))
    assert session.of_type(CompactionPlanEvent)
    assert session.of_type(CompactionStartEvent)[0].data.source_command_id is None
    assert _engine(session).resume_incomplete(turn=None) is not None
    assert _answers(session) == []


class _TimesOut:
    name = model = "times-out"

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        raise TimeoutError("no answer within 120 s")


def test_a_pressure_pass_whose_summariser_failed_is_said_as_failed_not_as_nothing_to_compact():
    """The request is over the window and a pass could run, but its summariser failed: the
    warning names the failure, where it said "nothing can be compacted yet". The next pass
    waits for more history, as after a refusal (a dead summariser was called at every step,
    each call retried with back-off: 119 calls in 12 turns in the audit), and never gives up."""
    session = new_session(MemoryStore())
    for i in range(6):
        append_tool_turn(session, f"p{i}", calls=[("read_file", "{}", f"output {i} " * 80)])
    settings = CompactionSettings(backend="basic", retain_tokens=300)
    engine = CompactionEngine(session, BasicBackend(_TimesOut(), settings), settings)
    window = engine.next_request_tokens() - 100  # over the window: the provider refuses it
    assert run(engine.compact_if_needed("pressure", turn=None, window=window)) is None
    (said,) = engine.warnings
    assert "nothing can be compacted" not in said
    assert said.startswith(
        f"context is ~{engine.next_request_tokens():,} tokens and the compaction pass did not "
        "finish (summary failed: no answer within 120 s), above the threshold"
    )
    assert said.endswith("; compaction tries again once more of the history can go")
    failed_passes = len(session.of_type(CompactionStartEvent))
    run(engine.compact_if_needed("pressure", turn=None, window=window))
    assert len(session.of_type(CompactionStartEvent)) == failed_passes  # no call: it waits
    for i in range(4):  # failures never give up, unlike refusals (MAX_REFUSALS)
        append_tool_turn(session, f"q{i}", calls=[("read_file", "{}", "more output " * 400)])
        before = len(session.of_type(CompactionStartEvent))  # more history than a retry step
        run(engine.compact_if_needed("pressure", turn=None, window=window))
        assert len(session.of_type(CompactionStartEvent)) == before + 1  # it did try again
    assert len(engine.warnings) == 1  # said once per crossing
