"""The degradation ladder (docs/compaction.md, same section): a code-only rollup of the oldest
stubs keeps every rolled-up id a recall target, is itself frozen, and resumes after a kill
exactly like a pass (plan first, then commits)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from dsh.compaction.recallable.rollup import (
    rollup_body,
    rollup_count,
    rollup_gains,
    rollup_text,
)
from dsh.events import CompactionPlanEvent, CompactionSummaryEvent, event_type_of
from dsh.recall.tools import read_checkpoint, search_history
from dsh.store import JsonlStore
from dsh.surface import Session
from tests.agent.conftest import run
from tests.compaction.test_recallable import (
    FOOTER,
    SETTINGS,
    assert_layout,
    engine_for,
    long_session,
)
from tests.helpers import append_tool_turn


def _rolled(session: Session):
    engine = engine_for(session)
    first = run(engine.compact_now(window=100_000))
    for i in range(8, 16):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    second = run(engine.compact_now(window=3500))
    return engine, first, second


def test_every_rolled_up_stub_stays_a_history_read_and_history_search_target():
    session = long_session(turns=14)
    _, first, second = _rolled(session)
    rollup = second.checkpoints[0]
    assert session.events[rollup.summary_seq].data.model == "rollup"
    rolled = [c for c in first.checkpoints if c.checkpoint_seq in rollup.shadowed_seqs]
    assert len(rolled) >= 2
    for stub in rolled:  # the original id opens the original messages
        page = read_checkpoint(session.events, f"c{stub.summary_seq}").text
        assert "Tool result:" in page and "User:" in page
    page = read_checkpoint(session.events, f"c{rollup.summary_seq}").text
    assert page.count("[index checkpoint]") == len(rolled)  # two hops: rollup -> stubs
    found = search_history(session.events, "ZEBRA-7700").text
    assert f"c{rolled[0].summary_seq}" in found
    # the rollup's footer reads forwards and spans every rolled-up stub's conversation span
    text = session.events[rollup.checkpoint_seq].data.text()
    match = FOOTER.search(text)
    assert match and int(match.group(2)) <= int(match.group(3))
    assert int(match.group(2)) == min(min(c.shadowed_seqs) for c in rolled)


def test_a_rollup_is_frozen_in_the_next_pass():
    session = long_session(turns=14)
    engine, _, second = _rolled(session)
    rollup_seq = second.checkpoints[0].checkpoint_seq
    body = session.events[rollup_seq].data.text()
    for i in range(16, 20):
        append_tool_turn(session, f"later {i}", calls=[("read_file", "{}", f"later {i}\n" * 60)])
    third = run(engine.compact_now(window=100_000))
    assert third is not None
    assert session.nodes[0] == rollup_seq and session.events[rollup_seq].data.text() == body
    assert all(rollup_seq not in c.shadowed_seqs for c in third.checkpoints)
    assert_layout(session)


def test_a_rollup_keeps_each_entrys_own_footer_and_trims_keywords():
    """A rollup lists the footer of every checkpoint it takes; a rolled-up rollup brings its own
    footer, not the ones listed inside it (those are one history_read away), so rolling up
    again does not grow by a footer per stub of the whole session."""
    stubs = [
        f"Did {i}.\nKeywords — id: ZEBRA-{i}, X_{i}_long_identifier_{i}\n"
        f"[checkpoint c{i}: shadows conversation span #{i}–#{i + 1}; originals retrievable "
        "via history_read]"
        for i in range(40)
    ]
    body = rollup_body(stubs)
    assert all(f"[checkpoint c{i}:" in body for i in range(40))
    assert body.startswith("Rolled-up index of 40 earlier checkpoints")
    earlier = rollup_text(body, 500, (0, 41))
    again = rollup_body([earlier, stubs[0]])
    assert again.count("[checkpoint c") == 2
    assert "[checkpoint c500: shadows conversation span #0–#41;" in again
    assert again.count("[checkpoint c0:") == 1 and "[checkpoint c39:" not in again
    assert len(again) < len(body) // 2
    keywords = next(line for line in body.splitlines() if line.startswith("Keywords"))
    assert len(keywords) <= 600 and "ZEBRA-0" in keywords and "ZEBRA-1" in keywords


CRASHER = """
import asyncio, os, sys
from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from tests.compaction.test_recallable import SETTINGS
from dsh.store import JsonlStore
from dsh.surface import Session
session = Session.open(JsonlStore(sys.argv[1]), sys.argv[2], writable=True)
backend = RecallableBackend(ExtractiveSummarizer(), SETTINGS)
engine = CompactionEngine(session, backend, SETTINGS,
                          on_commit=lambda n: os._exit(137) if n == 2 else None)
asyncio.run(engine.compact_now(window=3500))
"""


class _NoModel:
    name = model = "must-not-be-called"

    async def summarize(self, task):
        raise AssertionError("resume must not call a model")


def test_a_kill_after_the_rollup_committed_is_completed_from_the_plan(tmp_path: Path):
    store = JsonlStore(tmp_path)
    session = long_session(store, turns=14)
    run(engine_for(session).compact_now(window=100_000))
    for i in range(8, 16):
        append_tool_turn(session, f"more {i}", calls=[("read_file", "{}", f"more {i}\n" * 60)])
    session_id = session.id
    session.close()
    env = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    child = subprocess.run(
        [sys.executable, "-c", CRASHER, str(tmp_path), session_id], env=env, timeout=120
    )
    assert child.returncode == 137
    reopened = Session.open(store, session_id, writable=True)
    plan = [e for e in reopened.events if isinstance(e, CompactionPlanEvent)][-1]
    assert plan.data.regions[0].model == "rollup"
    types = [event_type_of(e) for e in reopened.events]
    after_plan = types[types.index("compaction/plan", types.index("compaction/plan") + 1) :]
    assert after_plan.count("compaction/summary") == 1  # only the rollup landed
    engine = CompactionEngine(reopened, RecallableBackend(_NoModel(), SETTINGS), SETTINGS)
    result = engine.resume_incomplete(turn=None)
    assert result is not None and len(result.checkpoints) == len(plan.data.regions) - 1
    summaries = [e for e in reopened.events if isinstance(e, CompactionSummaryEvent)]
    landed = summaries[-len(plan.data.regions) :]
    assert [s.data.summary for s in landed] == [r.summary for r in plan.data.regions]
    assert engine.incomplete_plan() is None
    assert_layout(reopened)


def test_the_rollup_cut_takes_the_fewest_stubs_that_reach_the_target_or_none():
    session = long_session(turns=14)
    run(engine_for(session).compact_now(window=100_000))
    backend = RecallableBackend(ExtractiveSummarizer(), SETTINGS)
    leading = backend._leading_stubs(session)
    region = sum(session.node_tokens(s) for s in leading)
    assert len(leading) >= 3
    gains = rollup_gains(session, leading)
    assert len(gains) == len(leading)
    assert gains[0] == 0 < gains[1] < gains[-1]  # a lone stub is never rolled up for room
    assert rollup_count(region, gains, target=region) == 2  # the first that shrinks
    assert rollup_count(region, gains, target=region - gains[-1]) == len(leading)
    assert rollup_count(region, gains, target=region - gains[-1] - 1) == 0
    assert rollup_count(region, gains[:1], target=10**6) == 0  # no gain, no rollup
    # new stubs count: the same gains need more of the oldest rolled up
    incoming = gains[1] + 1
    assert rollup_count(region + incoming, gains, target=region) > 2
    assert backend.min_stale_tokens(None) == SETTINGS.chunk_tokens // 2
