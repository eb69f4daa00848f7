"""Sessions whose last compaction pass never finished, made the way it happens: a child process
runs a real pass (the engine, the basic backend) and dies inside its summariser's call
(``os._exit``: a ``kill -9``, an OOM kill, a power cut), after the pass's ``compaction/start``
reached the store and before anything else of it did. ``turn``: the automatic pass ahead of a
turn's prompt (its ``turn/start`` logged, its prompt not yet); ``compact``: a ``/compact``
(``dsh compact``), its ``command/run`` logged and never answered."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Literal

from dsh.store import JsonlStore
from dsh.surface import Session
from tests.helpers import append_chat_turn

KILLER = """
import asyncio, os, sys
from dsh.compaction import BasicBackend, CompactionEngine
from dsh.compaction.commands import run_compact_command
from dsh.config import CompactionSettings
from dsh.events import TurnStart
from dsh.store import JsonlStore
from dsh.surface import Session

session = Session.open(JsonlStore(sys.argv[1]), sys.argv[2], writable=True)

class DiesMidCall:
    name = model = "dies-mid-call"
    async def summarize(self, task):
        session.sync()
        os._exit(137)

settings = CompactionSettings(backend="basic", retain_tokens=200)
engine = CompactionEngine(session, BasicBackend(DiesMidCall(), settings), settings,
                          new_id=lambda: "p1")
if sys.argv[3] == "compact":
    asyncio.run(run_compact_command(engine, window=100_000))
else:
    session.append(TurnStart(turn=9))
    asyncio.run(engine.compact_if_needed("pressure", turn=9, window=1_000))
"""

WORDS = "words " * 60


def killed_pass_session(home: Path, cwd: Path, how: Literal["turn", "compact"]) -> str:
    """A session in ``home`` (a JSONL store) of eight chat turns, then a pass killed mid-call
    (``how``); its id. The child's exit status says it died where meant."""
    store = JsonlStore(home)
    with Session.create(store, cwd=str(cwd)) as session:
        for i in range(8):
            append_chat_turn(session, f"question {i} {WORDS}", f"answer {i} {WORDS}")
    child = subprocess.run(
        [sys.executable, "-c", KILLER, str(home), session.id, how], timeout=120, check=False
    )
    assert child.returncode == 137, "the pass ended before its summariser was called"
    return session.id
