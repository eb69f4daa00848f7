"""A recallable compaction pass costs O(its span), not O(the log) (issue 12 item 7).

Builds two in-memory sessions through the public ``Session`` API — about 10,000 and about
100,000 events of tool turns, each turn with its own literals (``ZEBRA-<n>``, a path, a port),
compacted every 20 turns so the surface stays bounded as in a real long session — then appends
the SAME 12 turns to each and times one pass over them (``compact_now``: plan, the extractive
summariser, guard, plan event, commits). Printed per log size: the median of 3 such passes, and
the ratio 100k ÷ 10k (target ≤ 2×).

Then the first pass of a resumed session (a freshly constructed backend, as a new process has;
12 new turns each time), with and without the anchor index a backend keeps on disk
(``dsh.compaction.anchor_file``): without, the pass builds the index from the whole log, O(the
log); with, it reads the stored index and scans the new turns. Both are measured in the same run
on the same log (the stored one first, then 12 more turns and the one without), with their
ratio. Also printed: what storing costs — the file written whole (the first pass of a session,
or after the file was spoiled), one pass's appended record — and reading it alone.

Also printed: the wall time of one pass whose summariser takes 1 s per call, over a span of
20+ chunks, against one call (target ≤ 1.3×), and the same pass with instant answers as the
same-run figure of dsh's own work. The stand-in replays answers prepared before the clock starts
(a model's answer costs no local CPU); the pass ranks its literals in a thread while the call is
out. For comparison, the same pass whose stand-in writes the extractive text after its delay
(that text reads the rarity counts, so the ranking runs before the call).

Run: ``uv run python benchmarks/compaction_pass_scale.py [--small N] [--large N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from dsh.compaction import (
    CompactionEngine,
    ExtractiveSummarizer,
    RecallableBackend,
    SummaryOutput,
    SummaryTask,
)
from dsh.compaction.anchor_file import AnchorFile
from dsh.config import CompactionSettings
from dsh.events import (
    AssistantMessage,
    Message,
    ModelSource,
    StepEnd,
    StepStart,
    TextBlock,
    ToolCall,
    ToolCallBlock,
    ToolResult,
    ToolResultBlock,
    ToolSource,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    UserSource,
)
from dsh.store import MemoryStore, anchor_cache_path
from dsh.surface import Session

SETTINGS = CompactionSettings(backend="recallable", retain_tokens=600)
WINDOW = 64_000
SPAN_TURNS = 12


def _turn(session: Session, n: int, tag: str) -> None:
    """One two-step tool turn (11 events) with literals unique to ``n``."""
    turn = n + 1
    model = ModelSource(provider="bench", model="bench")
    call_id = f"call-{tag}-{n}"
    session.append(TurnStart(turn=turn))
    session.append(StepStart(turn=turn, step=1))
    session.append(
        Message(
            id=f"u-{tag}-{n}",
            role="user",
            content=(TextBlock(text=f"check ZEBRA-{n} in src/mod_{n % 97}.py on port {n}"),),
            source=UserSource(),
        )
    )
    call = ToolCallBlock(id=call_id, name="read_file", arguments=f'{{"path":"src/m{n}.py"}}')
    session.append(
        AssistantMessage(
            turn=turn,
            step=1,
            message=Message(id=f"a-{tag}-{n}", role="assistant", content=(call,), source=model),
        )
    )
    logged = session.append(
        ToolCall(turn=turn, step=1, call_id=call_id, name="read_file", arguments=call.arguments)
    )
    text = "".join(f"line {k}: value_{n}_{k} = {n * k}\n" for k in range(30))
    result = ToolResultBlock(tool_call_id=call_id, content=(TextBlock(text=text),))
    session.append(
        ToolResult(
            turn=turn,
            step=1,
            message=Message(
                id=f"r-{tag}-{n}", role="tool", content=(result,), source=ToolSource(call_id)
            ),
        ),
        source_event_seqs=[logged.seq],
    )
    session.append(StepEnd(turn=turn, step=1))
    session.append(StepStart(turn=turn, step=2))
    session.append(
        AssistantMessage(
            turn=turn,
            step=2,
            message=Message(
                id=f"f-{tag}-{n}",
                role="assistant",
                content=(TextBlock(text=f"ZEBRA-{n} is fine; port {n} answers"),),
                source=model,
            ),
        )
    )
    session.append(StepEnd(turn=turn, step=2))
    session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed")))


def build(events: int) -> tuple[Session, CompactionEngine, int]:
    session = Session.create(MemoryStore(), cwd="/bench")
    engine = _engine(session)
    n = 0
    while len(session.events) < events:
        _turn(session, n, "log")
        n += 1
        if n % 20 == 0:
            asyncio.run(engine.compact_now(window=WINDOW))
    return session, engine, n


def _engine(session: Session, anchor_file: Callable[[str], Path] | None = None) -> CompactionEngine:
    backend = RecallableBackend(ExtractiveSummarizer(), SETTINGS, anchor_file=anchor_file)
    return CompactionEngine(session, backend, SETTINGS)


def timed_pass(session: Session, engine: CompactionEngine, start: int, rep: int) -> float:
    for k in range(SPAN_TURNS):
        _turn(session, start + k, f"span{rep}")  # same shape and size at every log size
    began = time.perf_counter()
    result = asyncio.run(engine.compact_now(window=WINDOW))
    elapsed = time.perf_counter() - began
    assert result is not None
    return elapsed


@dataclass
class Resumed:
    """The first pass of a resumed session, with and without the stored anchor index."""

    events: int
    warm: float
    """The median pass of a running session."""
    stored: float
    """The first pass of a new backend that reads the stored index."""
    built: float
    """The first pass of a new backend without one: it builds the index from the log."""
    write_whole: float
    append: float
    read: float
    size: int


class TimedSaves:
    """Times each ``AnchorFile.save`` (the whole file or one appended record)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._real = AnchorFile.save

    def __enter__(self) -> TimedSaves:
        real, times = self._real, self.times

        def timed(file: AnchorFile, *args: Any, **kwargs: Any) -> None:
            began = time.perf_counter()
            real(file, *args, **kwargs)
            times.append(time.perf_counter() - began)

        AnchorFile.save = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        AnchorFile.save = self._real  # type: ignore[method-assign]


def measure(events: int, directory: Path) -> Resumed:
    session, engine, n = build(events)
    times = [timed_pass(session, engine, n + 100 * rep, rep) for rep in range(3)]
    where = partial(anchor_cache_path, directory)
    with TimedSaves() as whole:  # a session's first pass with the file: built, written whole
        _timed_first_pass(session, _engine(session, where), n + 1000, "first")
    path = where(session.id)
    began = time.perf_counter()
    assert AnchorFile(path, session).load(session, len(session.events)) is not None  # alone
    read = time.perf_counter() - began
    with TimedSaves() as appended:  # a resumed session: read the file, scan 12 turns, append
        stored = _timed_first_pass(session, _engine(session, where), n + 2000, "stored")
    built = _timed_first_pass(session, _engine(session), n + 3000, "built")  # the baseline
    return Resumed(
        len(session.events),
        statistics.median(times),
        stored,
        built,
        whole.times[0],
        appended.times[0],
        read,
        path.stat().st_size,
    )


def _timed_first_pass(session: Session, engine: CompactionEngine, start: int, tag: str) -> float:
    for k in range(SPAN_TURNS):
        _turn(session, start + k, tag)
    began = time.perf_counter()
    assert asyncio.run(engine.compact_now(window=WINDOW)) is not None
    return time.perf_counter() - began


class SlowSummarizer:
    """A stand-in for a model call: answers after ``delay`` seconds. With ``answers`` it
    replays them in order (prepared before the clock starts, so the pass pays no local CPU for
    them, as with a real model); without, it writes the extractive text after the delay."""

    name = model = "slow"

    def __init__(self, delay: float, answers: list[SummaryOutput] | None = None) -> None:
        self.delay = delay
        self.answers = answers
        self.outputs: list[SummaryOutput] = []
        self.wall = 0.0
        """Wall time of the pass it served (set by ``wall_of_a_wide_pass``)."""

    @property
    def calls(self) -> int:
        return len(self.outputs)

    @property
    def reads_rarity(self) -> bool:
        """Replayed answers read nothing of the task, like a model's; the extractive text
        reads its rarity counts."""
        return self.answers is None

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        await asyncio.sleep(self.delay)
        if self.answers is None:
            output = await ExtractiveSummarizer().summarize(task)
        else:
            output = self.answers[len(self.outputs)]
        self.outputs.append(output)
        return output


def wall_of_a_wide_pass(delay: float, answers: list[SummaryOutput] | None = None) -> SlowSummarizer:
    """Time one pass over 260 turns (20+ chunks) with ``SlowSummarizer(delay, answers)``; the
    summariser it ran with (its outputs, and ``wall`` set to the pass's wall time)."""
    session = Session.create(MemoryStore(), cwd="/bench")
    for n in range(260):
        _turn(session, n, "wide")
    summarizer = SlowSummarizer(delay, answers)
    engine = CompactionEngine(session, RecallableBackend(summarizer, SETTINGS), SETTINGS)
    began = time.perf_counter()
    asyncio.run(engine.compact_now(window=10**6))
    summarizer.wall = time.perf_counter() - began
    return summarizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        small = measure(args.small, Path(directory))
        large = measure(args.large, Path(directory))
    for run in (small, large):
        print(
            f"pass over {SPAN_TURNS} turns on a {run.events:,}-event log: {run.warm * 1000:.1f} ms"
        )
    print(f"ratio large / small: {large.warm / small.warm:.2f}x (target <= 2x)")
    for run in (small, large):
        print(
            f"first pass of a resumed session at {run.events:,} events: "
            f"{run.built * 1000:.1f} ms building the anchor index from the log, "
            f"{run.stored * 1000:.1f} ms with the stored index "
            f"({run.built / run.stored:.1f}x faster)"
        )
        print(
            f"  the stored index ({run.size / 1e6:.1f} MB): written whole "
            f"{run.write_whole * 1000:.1f} ms, one pass's record appended "
            f"{run.append * 1000:.2f} ms, read {run.read * 1000:.1f} ms"
        )
    extractive = wall_of_a_wide_pass(1.0)  # the stand-in writes its text after the delay
    answers = extractive.outputs
    model = wall_of_a_wide_pass(1.0, answers)  # a model's answers: no local CPU for them
    code = wall_of_a_wide_pass(0.0, answers)  # the same pass, instant answers (baseline)
    wall, cpu = model.wall, code.wall
    print(
        f"pass of {model.calls} call(s) with a 1 s summariser: {wall:.2f} s = {wall:.2f}x one "
        f"call (target <= 1.3x); the same pass with instant answers: {cpu:.2f} s of dsh's own "
        f"work (plan, ranking, checks, commits), the ranking done beside the call"
    )
    print(f"with the extractive text written inside the 1 s stand-in: {extractive.wall:.2f} s")


if __name__ == "__main__":
    main()
