"""A logged plan that can no longer land (a damaged log) is abandoned on resume, once, with its
reason — instead of half-committing on every later step."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dsh.compaction import BasicBackend, CompactionEngine, ExtractiveSummarizer
from dsh.config import CompactionSettings
from dsh.events import (
    CompactionEndEvent,
    CompactionPlan,
    CompactionStart,
    RegionText,
    is_checkpoint_event,
)
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.helpers import append_tool_turn, new_session

SETTINGS = CompactionSettings(backend="basic", retain_tokens=60)


def _session_with_plan(tmp_path: Path, pick) -> tuple[JsonlStore, str]:
    """Four tool turns, then a pass killed after its plan whose one region is ``pick(nodes)``."""
    store = JsonlStore(tmp_path)
    session = new_session(store)
    for i in range(4):
        append_tool_turn(session, f"p{i}", calls=[("read_file", "{}", f"output {i} " * 20)])
    regions = (RegionText(kind="state", shadowed_seqs=pick(session.nodes), summary="s"),)
    session.append(CompactionStart(compaction_id="x-1", pass_id="x", turn=None))
    session.append(CompactionPlan(pass_id="x", regions=regions))
    session.close()
    return store, session.id


def _resume(store: JsonlStore, session_id: str) -> tuple[Session, CompactionEngine]:
    session = Session.open(store, session_id, writable=True)
    engine = CompactionEngine(session, BasicBackend(ExtractiveSummarizer(), SETTINGS), SETTINGS)
    return session, engine


def _assert_abandoned_once(store: JsonlStore, session_id: str, reason: str) -> None:
    session, engine = _resume(store, session_id)
    nodes_before = list(session.nodes)
    assert engine.incomplete_plan() is not None
    assert engine.resume_incomplete(turn=None) is None
    assert session.nodes == nodes_before  # nothing replaced
    assert not any(is_checkpoint_event(e) for e in session.events)
    end = session.events[-1]
    assert isinstance(end, CompactionEndEvent) and end.data.pass_id == "x"
    assert end.data.error is not None and reason in end.data.error
    assert engine.live_orphan() is None
    count = len(session.events)
    assert engine.incomplete_plan() is None
    assert engine.resume_incomplete(turn=None) is None
    assert len(session.events) == count  # never tried again, nothing appended
    session.close()

    reopened, engine = _resume(store, session_id)  # the verdict is in the log, not in memory
    assert engine.incomplete_plan() is None
    result = asyncio.run(engine.compact_now(window=10_000))
    assert result is not None and result.checkpoints  # compaction works again
    reopened.close()


def test_a_plan_whose_region_is_no_longer_one_run_of_nodes_is_abandoned(tmp_path: Path):
    store, session_id = _session_with_plan(tmp_path, lambda nodes: (nodes[0], nodes[2]))
    _assert_abandoned_once(store, session_id, "no longer one run of surface nodes")


def test_a_plan_naming_a_node_that_does_not_exist_is_abandoned(tmp_path: Path):
    store, session_id = _session_with_plan(tmp_path, lambda nodes: (nodes[0], nodes[1], 99_999))
    _assert_abandoned_once(store, session_id, "no longer one run of surface nodes")


def test_a_plan_that_would_split_a_tool_call_from_its_result_is_abandoned(tmp_path: Path):
    # nodes[1] is the assistant message whose call nodes[2] answers
    store, session_id = _session_with_plan(tmp_path, lambda nodes: (nodes[0], nodes[1]))
    _assert_abandoned_once(store, session_id, "would split a tool call from its result")


def test_a_landable_plan_is_still_committed_on_resume(tmp_path: Path):
    store, session_id = _session_with_plan(tmp_path, lambda nodes: tuple(nodes[:3]))
    session, engine = _resume(store, session_id)
    result = engine.resume_incomplete(turn=None)
    assert result is not None and len(result.checkpoints) == 1
    assert engine.incomplete_plan() is None
    assert not any(
        isinstance(e, CompactionEndEvent) and e.data.error is not None for e in session.events
    )
