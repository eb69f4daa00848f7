"""Kill -9 at sampled writes of a compaction pass, for both stores (issue 15).

The fuzzer is ``benchmarks/compaction_kill.py`` (every write of the pass); this runs a fixed
sample of its kill points: a child process runs a recallable pass and is SIGKILLed at the N-th
store write, then the session must load with nothing committed lost or altered, the pass must be
absent, complete or resumed exactly from its plan without a model call, and a later pass must
complete.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from dsh.events import CompactionEndEvent, CompactionStart, SessionEndSeedEvent
from dsh.store import JsonlStore, SqliteStore
from dsh.store.pass_repair import PASS_PROCESS_ENDED
from dsh.surface import Session
from tests.helpers import append_tool_turn, fixed_clock

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import compaction_kill

# (mode, write) per store; write -1 is the pass's last write. A pass writes
# [end-seed + start], plan, then per region summary, replace, end (and the next start).
SAMPLE = {
    "jsonl": [("after", 1), ("after", 2), ("after", 3), ("after", -1), ("torn", 2), ("torn", 4)],
    "sqlite": [
        ("after", 1),
        ("after", 2),
        ("after", 3),
        ("after", -1),
        ("during", 2),
        ("during", 4),
    ],
}
EXPECTED = {
    ("after", 1): "absent",  # killed while summarising: start written, no plan
    ("after", 2): "resumed",  # the plan is committed, no region yet
    ("after", 3): "resumed",  # a summary without its replace: a dead bracket, committed again
    ("after", -1): "complete",
    ("torn", 2): "absent",  # the plan itself was torn: the pass never happened
    ("torn", 4): "resumed",
    ("during", 2): "absent",
    ("during", 4): "resumed",
}


@pytest.mark.parametrize("kind", compaction_kill.STORES)
def test_a_kill_at_any_sampled_write_of_a_pass_loses_nothing_and_resumes_exactly(
    kind: str, tmp_path: Path
) -> None:
    base = tmp_path / "base"
    session_id = compaction_kill.build(kind, base)
    ref = compaction_kill.reference(kind, base, session_id, tmp_path)
    assert len(ref.regions) > 2  # a pass of several regions, so kills land between commits
    outcomes = []
    for mode, write in SAMPLE[kind]:
        number = write if write > 0 else len(ref.batches)
        outcome = compaction_kill.try_point(kind, base, session_id, ref, number, mode, tmp_path)
        outcomes.append(((mode, write), outcome.verdict, outcome.reason))
    assert outcomes == [(point, EXPECTED[point], "") for point in SAMPLE[kind]]


@pytest.mark.parametrize("store_class", [JsonlStore, SqliteStore])
def test_a_pass_killed_before_its_plan_does_not_block_compaction_after_reopening(
    store_class: type[JsonlStore] | type[SqliteStore], tmp_path: Path
) -> None:
    store = store_class(tmp_path)
    session = Session(store.create(cwd="/w"), clock=fixed_clock)
    for i in range(6):
        append_tool_turn(session, f"p{i}", calls=[("read_file", "{}", f"output {i} " * 80)])
    session.append(CompactionStart(compaction_id="dead-1", pass_id="dead", turn=None))
    session.close()  # the process died while summarising: a start without plan or end

    reopened = Session(store.open(session.id, writable=True), clock=fixed_clock)
    engine = CompactionEngine(
        reopened,
        RecallableBackend(ExtractiveSummarizer(), compaction_kill.SETTINGS),
        compaction_kill.SETTINGS,
    )
    # the open closed it (dsh.store.pass_repair): a new lifecycle, the start ended with why
    seed, end = reopened.events[-2:]
    assert isinstance(seed, SessionEndSeedEvent) and isinstance(end, CompactionEndEvent)
    assert (end.data.compaction_id, end.data.error) == ("dead-1", PASS_PROCESS_ENDED)
    assert engine.live_orphan() is None
    result = asyncio.run(engine.compact_now(window=compaction_kill.WINDOW))  # `dsh compact`
    assert result is not None and result.checkpoints
    assert reopened.lifecycle_started
    reopened.close()
