"""A process killed between a checkpoint's replace and its ``compaction/end``.

The checkpoint stands on the surface, but recall reads only a closed bracket: before the next
pre-step closed it, ``history_read`` of the checkpoint answered that nothing was replaced and
``history_search`` did not find what it shadows, so those originals were out of reach for good
(the plan counted as complete, as no region of it was left on the surface). docs/compaction.md,
"Failure handling", says what happens now.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dsh.events import CompactionEndEvent, encode_json
from dsh.recall.checkpoints import list_checkpoints
from dsh.recall.tools import read_checkpoint, search_history
from dsh.store import JsonlStore
from dsh.surface import Session, checkpoint_kind
from tests.agent.conftest import run
from tests.compaction.test_recallable import (
    FOOTER,
    _NoModel,
    assert_layout,
    checkpoint_bodies,
    engine_for,
    layout,
    long_session,
)

KILLER = """
import asyncio, itertools, os, sys
from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from dsh.config import CompactionSettings
from dsh.events import CompactionEnd
from dsh.store import JsonlStore
from dsh.surface import Session
settings = CompactionSettings(backend="recallable", retain_tokens=300, chunk_tokens=400,
                              stub_tokens=100, state_max_tokens=300)
session = Session.open(JsonlStore(sys.argv[1]), sys.argv[2], writable=True)
region = sys.argv[3]
append = session.append
def dying_append(payload, *args, **kwargs):
    if isinstance(payload, CompactionEnd) and payload.compaction_id.endswith("-" + region):
        session.sync()
        os._exit(137)  # the checkpoint replace is in the log; its end never is
    return append(payload, *args, **kwargs)
session.append = dying_append
ids = itertools.count(1)
engine = CompactionEngine(session, RecallableBackend(ExtractiveSummarizer(), settings), settings,
                          new_id=lambda: f"p{next(ids)}")
asyncio.run(engine.compact_now(window=100_000))
"""


def surface_checkpoint_ids(session: Session) -> list[str]:
    ids = []
    for seq in session.nodes:
        if checkpoint_kind(session, seq):
            match = FOOTER.search(session.events[seq].data.text())
            assert match is not None
            ids.append(f"c{match.group(1)}")
    return ids


@pytest.mark.parametrize("region", ["1", "2", "4"])
def test_a_kill_between_a_replace_and_its_end_loses_no_original(tmp_path: Path, region: str):
    store = JsonlStore(tmp_path / "killed")
    session = long_session(store)
    session_id = session.id
    session.close()
    child = subprocess.run(
        [sys.executable, "-c", KILLER, str(tmp_path / "killed"), session_id, region], timeout=60
    )
    assert child.returncode == 137
    reopened = Session.open(store, session_id, writable=True)
    engine = engine_for(reopened, _NoModel())
    assert engine.incomplete_plan() is not None
    engine.resume_incomplete(turn=None)
    assert engine.incomplete_plan() is None
    assert_layout(reopened)
    for checkpoint in surface_checkpoint_ids(reopened):  # every footer id on the surface reads
        assert (
            "(end of checkpoint span)"
            in read_checkpoint(reopened.events, checkpoint, budget_chars=10**7).text
        )
    surface = encode_json([reopened.events[seq].data for seq in reopened.nodes]).decode()
    for step in range(8):
        fact = f"ZEBRA-{7700 + step}"
        if fact not in surface:
            assert "Found 0 match" not in search_history(reopened.events, fact).text, fact
    ended = {e.data.compaction_id for e in reopened.events if isinstance(e, CompactionEndEvent)}
    assert {c.start.data.compaction_id for c in list_checkpoints(reopened.events)} <= ended

    clean = long_session()
    run(engine_for(clean).compact_now(window=100_000))
    assert checkpoint_bodies(reopened) == checkpoint_bodies(clean)
    assert layout(reopened) == layout(clean)
