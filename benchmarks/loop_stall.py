"""How long the event loop stops while dsh does whole-log work: a ``/compact`` pass with the
default extractive summariser on a session without a stored anchor index (it builds the index
from the whole log), and a process's first ``history_search`` (it builds every span's word
index). The TUI takes keys, and ``dsh web`` answers every page and session, only while the loop
runs, so the longest stall is what a person waits for a key echo or a request.

A JSONL session of about ``--sizes`` events is built per size with the web benchmarks'
generator (``_web_session.build_session``: 1-3 step turns, read_file results, a checkpoint every
250 turns), copied for each pass. While the work runs, a ticker coroutine sleeps 5 ms at a time
and notes the gap between its wake-ups; printed per size: the work's wall time, the longest gap
during it, the longest gap of the same ticker over an idle loop for 0.3 s (the baseline,
measured in the same run) and the ratio. Before the work moved to worker threads the longest
gap was the whole work (a 100,000-event pass stalled the loop for seconds); now it is a few
switch intervals of the GIL. Reported, never an error exit.

Run: ``uv run python benchmarks/loop_stall.py [--sizes 10000,100000]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _web_session import build_session
from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from dsh.config import CompactionSettings
from dsh.recall import HistorySearchTool
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tools.base import ToolContext

SETTINGS = CompactionSettings(backend="recallable")
WINDOW = 200_000
TICK = 0.005
QUERY = "parser retried the stale window"
"""No message holds it literally, so the search goes on to the words (the word index build)."""


async def longest_gap(work: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(wall time of ``work``, longest gap between the ticker's wake-ups while it ran)."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    await asyncio.sleep(TICK * 2)
    gaps.clear()
    began = time.perf_counter()
    await work()
    wall = time.perf_counter() - began
    done.set()
    await ticking
    return wall, max(gaps, default=wall)


async def idle() -> None:
    await asyncio.sleep(0.3)


def fresh_copy(home: Path, into: Path, session_id: str) -> Session:
    shutil.copytree(home / "sessions", into / "sessions")
    return Session.open(JsonlStore(into), session_id, writable=True)


def measure(events: int, directory: Path) -> dict[str, tuple[float, float]]:
    home = directory / f"home-{events}"
    session_id, _, _ = build_session(JsonlStore(home), directory, events, seed=1)
    rows: dict[str, tuple[float, float]] = {}
    rows["idle loop (baseline)"] = asyncio.run(longest_gap(idle))
    session = fresh_copy(home, directory / f"compact-{events}", session_id)
    engine = CompactionEngine(
        session, RecallableBackend(ExtractiveSummarizer(), SETTINGS), SETTINGS
    )

    async def compact() -> None:
        assert await engine.compact_now(window=WINDOW) is not None

    rows["/compact, no stored anchor index"] = asyncio.run(longest_gap(compact))
    session.close()
    session = Session.open(JsonlStore(home), session_id)
    tool = HistorySearchTool()  # a new process: no spans, no word indexes in memory
    ctx = ToolContext(
        workspace=directory,
        session_id=session_id,
        call_id="bench",
        history=session.events,
        history_index=session,
    )

    async def search() -> None:
        output = await tool.run({"query": QUERY}, ctx)
        assert output.meta.get("byWords", 0) >= 1, output.text[:200]

    rows["first history_search (by words)"] = asyncio.run(longest_gap(search))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    print(
        "load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()), f"({os.cpu_count()} CPUs)"
    )
    with tempfile.TemporaryDirectory() as directory:
        for size in (int(s) for s in args.sizes.split(",")):
            rows = measure(size, Path(directory))
            _, baseline = rows["idle loop (baseline)"]
            print(f"{size:,} events:")
            for name, (wall, gap) in rows.items():
                print(
                    f"  {name:<34} work {wall * 1000:8.1f} ms, longest loop stall "
                    f"{gap * 1000:7.1f} ms = {gap / baseline:6.1f}x the idle loop's "
                    f"{baseline * 1000:.1f} ms"
                )
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
