"""What sharing a streaming reply with other processes costs the turn that streams it.

Every agent writes the deltas of its running model call to the session's side file
(``dsh.agent.live_text``), so a ``dsh web`` in another process can show the reply as it
streams. This drives real turns through ``build_agent`` (a ``JsonlStore`` in a temporary
home, compaction off) whose model streams a reply of ``--deltas`` pieces (default 20,000 of
4 characters) as fast as it can, yielding to the event loop between pieces as a network read
does: the worst case for the side file (a slow model writes at most once per flush interval).
Baseline, measured in the same run on the same machine: the same turns with the side file not
wired (``share_stream`` replaced by the listener alone). The arms alternate, each turn on a
fresh session; the best of ``--repeat`` turns (default 15) of each arm is kept.

Printed: the turn's wall time and this process's CPU time with the side file and without, their
ratios, the cost per delta, and how many writes the side file took (batched: far fewer than the
deltas). CPU time is the steadier figure on a shared machine. The ratio is the worst case's:
here a delta costs the loop itself a few microseconds, where a real model's come tens of
milliseconds apart.

Run: ``uv run python benchmarks/live_text.py [--deltas N] [--repeat R] [--json]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

import msgspec

from dsh.agent import live_text
from dsh.agent.runtime import Route
from dsh.agent.wiring import build_agent
from dsh.config import CompactionSettings, Settings
from dsh.events import Event
from dsh.llm.types import Finish, ModelRequest, StreamEvent, TextDelta
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy

T = TypeVar("T")
PIECE = "tok "


class FastStream:
    """A model that streams ``count`` pieces, handing the loop over between them."""

    name = "bench"

    def __init__(self, count: int) -> None:
        self.count = count

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        return self._pieces()

    async def _pieces(self) -> AsyncIterator[StreamEvent]:
        for _ in range(self.count):
            await asyncio.sleep(0)
            yield TextDelta(PIECE)
        yield Finish("stop")


def one_turn(home: Path, deltas: int, shared: bool) -> tuple[float, float]:
    """The wall and CPU time, in seconds, of one turn on a fresh session streaming ``deltas``
    pieces."""
    settings = msgspec.structs.replace(Settings(), compaction=CompactionSettings(backend="off"))
    route = Route(FastStream(deltas), "bench", 400_000)
    session = Session.create(JsonlStore(home), cwd=home)
    try:
        wired = mock.patch("dsh.agent.wiring.share_stream", lambda s, h, listener: listener)
        with contextlib.nullcontext() if shared else wired:
            agent = build_agent(
                session, settings, route, workspace=home, policy=ApprovalPolicy("auto"),
                environ={"DSH_HOME": str(home)},
            )  # fmt: skip
        start, cpu = time.perf_counter(), time.process_time()
        result = asyncio.run(agent.run_turn("stream a long reply"))
        took = time.perf_counter() - start, time.process_time() - cpu
        assert result.text == PIECE * deltas, result
        return took
    finally:
        session.close()


def counted_writes(work: Callable[[], T]) -> tuple[T, int]:
    writes = 0
    real = live_text._write

    def counting(fd: int, data: bytes) -> None:
        nonlocal writes
        writes += 1
        real(fd, data)

    with mock.patch.object(live_text, "_write", counting):
        took = work()
    return took, writes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    shared_times: list[tuple[float, float]] = []
    base_times: list[tuple[float, float]] = []
    writes = 0
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        one_turn(home, 200, True)  # warm up imports and caches
        one_turn(home, 200, False)
        for _ in range(args.repeat):
            took, writes = counted_writes(lambda: one_turn(home, args.deltas, True))
            shared_times.append(took)
            base_times.append(one_turn(home, args.deltas, False))
    result: dict[str, Any] = {"deltas": args.deltas, "side_file_writes": writes}
    for index, clock in enumerate(("wall", "cpu")):
        shared = min(times[index] for times in shared_times)
        base = min(times[index] for times in base_times)
        result[clock] = {
            "with_side_file_ms": round(shared * 1000, 1),
            "baseline_ms": round(base * 1000, 1),
            "ratio": round(shared / base, 3),
            "per_delta_us": round((shared - base) / args.deltas * 1e6, 2),
        }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"one turn streaming {args.deltas} deltas of {len(PIECE)} characters, best of {args.repeat}"
    )
    print(f"  side file writes: {writes}")
    for clock in ("wall", "cpu"):
        figures = result[clock]
        print(
            f"  {clock}: with the side file {figures['with_side_file_ms']} ms, baseline (no side"
            f" file, same run) {figures['baseline_ms']} ms, ratio {figures['ratio']},"
            f" {figures['per_delta_us']} us per delta"
        )


if __name__ == "__main__":
    main()
