"""Kill -9 at every write of a compaction pass, for both stores (issue 15).

One closed session of tool turns is built through the real API on a JSONL store and on a SQLite
store. A child process opens it for writing and runs one manual recallable pass
(``CompactionEngine.compact_now`` with the keyless extractive summariser). The child counts the
store writes of the pass (calls of the backend's ``_write_lines``: one committed batch each) and
SIGKILLs itself at the chosen one:

* ``after``: right after write N returned (its batch is committed);
* ``torn`` (JSONL): halfway through write N — half of the batch's bytes reach the file, then the
  kill (a torn last line);
* ``during`` (SQLite): inside write N's transaction, before it commits (a progress handler on the
  connection sends the kill while SQLite executes the batch).

A run without a kill gives the reference: the batch sizes of the pass and the log it leaves.
After each kill the parent checks, on a fresh copy of the session each time:

1. the session loads (read-only, then for writing);
2. nothing committed is lost or altered: the loaded log is exactly the reference's first K events,
   K = the events of the batches that committed (N for ``after``, N-1 otherwise), byte for byte;
3. the engine's "plan first, then commits" rule (docs/compaction.md, "The events of a pass"): no
   summary or checkpoint of the pass precedes its ``compaction/plan``;
4. the pass is absent (no region landed; the surface is the one before the pass), complete, or
   resumed exactly: the next pre-step (``compact_if_needed``) commits the rest from the plan with
   no summariser call, and the pass's regions (kind, shadowed seqs, summary text) equal the
   reference's;
5. a later pass completes: more turns are appended and ``compact_now`` lands a pass that ends
   without error.

Each kill point is ``loaded-clean`` (every check held) with its kind (``absent``, ``complete``,
``resumed``), or ``lost`` with the first check that failed (should never happen).

Run: ``uv run python benchmarks/compaction_kill.py [--store jsonl|sqlite|both] [--every K]
[--json]``; ``--every K`` tries every K-th write (default 1: every write).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from dsh.compaction.summarizer import SummaryOutput, SummaryTask
from dsh.config import CompactionSettings
from dsh.events import (
    AssistantMessage,
    CompactionEndEvent,
    CompactionPlanEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
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
    TurnStartEvent,
    UserSource,
    encode_event,
    is_checkpoint_event,
    is_replacement_surface_event,
)
from dsh.store import EventStore, JsonlStore, SqliteStore
from dsh.surface import Session

STORES = ("jsonl", "sqlite")
MODES = {"jsonl": ("after", "torn"), "sqlite": ("after", "during")}
SETTINGS = CompactionSettings(
    backend="recallable",
    threshold_ratio=0.8,
    retain_tokens=300,
    chunk_tokens=400,
    stub_tokens=100,
    state_max_tokens=300,
)
WINDOW = 20_000
CLOCK_MS = 1_790_000_000_000

CHILD = r"""
import asyncio, itertools, json, os, signal, sys
from dsh.compaction import CompactionEngine, ExtractiveSummarizer, RecallableBackend
from dsh.store import JsonlStore, SqliteStore
from dsh.store.integrity import seal
from dsh.store.jsonl import JsonlSessionLog
from dsh.store.sqlite import SqliteSessionLog
from dsh.surface import Session
sys.path.insert(0, sys.argv[5])
from compaction_kill import SETTINGS, WINDOW, CLOCK_MS

kind, home, session_id, mode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[6]
kill_at = int(sys.argv[4])
cls = JsonlSessionLog if kind == "jsonl" else SqliteSessionLog
original = cls._write_lines
batches = []

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def counted(self, lines, *, durable):
    number = len(batches) + 1
    if number == kill_at and mode == "torn":
        data = b"\n".join(seal(line) for line in lines) + b"\n"
        os.write(self._fd, data[: len(data) // 2])
        die()
    if number == kill_at and mode == "during":
        self._db.set_progress_handler(die, 1)
    original(self, lines, durable=durable)
    batches.append(len(lines))
    if number == kill_at:
        die()

cls._write_lines = counted
store = JsonlStore(home) if kind == "jsonl" else SqliteStore(home)
session = Session(store.open(session_id, writable=True), clock=lambda: CLOCK_MS)
ids = itertools.count(1)
engine = CompactionEngine(
    session, RecallableBackend(ExtractiveSummarizer(), SETTINGS), SETTINGS,
    new_id=lambda: f"pass{next(ids)}",
)
result = asyncio.run(engine.compact_now(window=WINDOW))
session.close()
print(json.dumps({"batches": batches, "regions": len(result.checkpoints) if result else 0}))
"""


# ---- the session ------------------------------------------------------------------------------


def append_turns(session: Session, count: int, *, tag: str) -> None:
    """``count`` closed turns: a prompt, one read_file call with a ~1 KB result, a reply."""
    first = 1 + sum(isinstance(e, TurnStartEvent) for e in session.events)
    for offset in range(count):
        turn = first + offset
        call_id = f"{tag}-call-{turn}"
        session.append(TurnStart(turn=turn))
        session.append(StepStart(turn=turn, step=1))
        session.append(_message(f"{tag}-u{turn}", "user", f"look at module {turn} ({tag})"))
        block = ToolCallBlock(id=call_id, name="read_file", arguments=f'{{"path":"m{turn}.py"}}')
        session.append(
            AssistantMessage(
                turn=turn, step=1, message=_message(f"{tag}-a{turn}", "assistant", "", block)
            )
        )
        call = session.append(
            ToolCall(
                turn=turn, step=1, call_id=call_id, name="read_file", arguments=block.arguments
            )
        )
        body = f"def handler_{turn}(): return {turn * 7}  # port = {8000 + turn}\n" * 24
        result = Message(
            id=f"{tag}-r{turn}",
            role="tool",
            content=(ToolResultBlock(tool_call_id=call_id, content=(TextBlock(text=body),)),),
            source=ToolSource(call_id=call_id),
        )
        session.append(ToolResult(turn=turn, step=1, message=result), source_event_seqs=[call.seq])
        session.append(StepEnd(turn=turn, step=1))
        session.append(StepStart(turn=turn, step=2))
        reply = f"module {turn} defines handler_{turn}; it listens on port {8000 + turn}"
        session.append(
            AssistantMessage(
                turn=turn, step=2, message=_message(f"{tag}-f{turn}", "assistant", reply)
            )
        )
        session.append(StepEnd(turn=turn, step=2))
        session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed")))


def _message(id: str, role: str, text: str, *calls: ToolCallBlock) -> Message:
    content: tuple[Any, ...] = ((TextBlock(text=text),) if text else ()) + calls
    source = UserSource() if role == "user" else ModelSource(provider="fake", model="fake")
    return Message(id=id, role=role, content=content, source=source)  # type: ignore[arg-type]


def open_store(kind: str, home: Path) -> EventStore:
    return JsonlStore(home) if kind == "jsonl" else SqliteStore(home)


def build(kind: str, home: Path, turns: int = 8) -> str:
    store = open_store(kind, home)
    session = Session(store.create(cwd="/work/project"), clock=lambda: CLOCK_MS)
    append_turns(session, turns, tag="t")
    session.close()
    return session.id


# ---- one run of the child ---------------------------------------------------------------------


@dataclass
class Reference:
    """The pass without a kill: the log before it, its batch sizes and the log after it."""

    before: list[bytes]
    before_nodes: tuple[int, ...]
    batches: list[int]
    after: list[bytes]
    regions: list[tuple[str, tuple[int, ...], str]]


def run_child(
    kind: str, home: Path, session_id: str, kill_at: int, mode: str
) -> subprocess.CompletedProcess[str]:
    here = str(Path(__file__).resolve().parent)
    return subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(home), session_id, str(kill_at), here, mode],
        capture_output=True,
        text=True,
        timeout=300,
    )


def encoded(events: Any) -> list[bytes]:
    return [encode_event(e) for e in events]


def pass_regions(events: Any, pass_id: str) -> list[tuple[str, tuple[int, ...], str]]:
    """The regions of a pass that landed: each summary immediately followed by its replace (a
    kill between the two leaves a dead bracket whose region the resume commits again)."""
    return [
        (e.data.kind or "state", tuple(e.data.shadowed_seqs), e.data.summary)
        for e, after in itertools.pairwise(events)
        if isinstance(e, CompactionSummaryEvent)
        and e.data.pass_id == pass_id
        and is_checkpoint_event(after)
    ]


def reference(kind: str, base: Path, session_id: str, work: Path) -> Reference:
    home = work / f"{kind}-reference"
    shutil.copytree(base, home)
    store = open_store(kind, home)
    start = Session.open(store, session_id)
    before, before_nodes = encoded(start.events), tuple(start.nodes)
    child = run_child(kind, home, session_id, 0, "none")
    if child.returncode != 0:
        raise SystemExit(f"the reference pass failed:\n{child.stderr}")
    batches = json.loads(child.stdout)["batches"]
    done = Session.open(store, session_id)
    return Reference(
        before, before_nodes, batches, encoded(done.events), pass_regions(done.events, "pass1")
    )


# ---- one kill point ---------------------------------------------------------------------------


@dataclass
class Outcome:
    store: str
    mode: str
    write: int
    verdict: str
    """``absent``, ``complete``, ``resumed`` (all loaded-clean) or ``lost``."""
    reason: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return self.verdict != "lost"


class Lost(Exception):
    """A check failed: the kill lost, altered or stranded something."""


class _NoModel:
    """Resume must commit from the plan: a summariser call is a failed check."""

    name = model = "no-model"

    async def summarize(self, task: SummaryTask) -> SummaryOutput:
        raise Lost("the resume called the summariser")


def try_point(
    kind: str, base: Path, session_id: str, ref: Reference, write: int, mode: str, work: Path
) -> Outcome:
    home = work / f"{kind}-{mode}-{write}"
    shutil.copytree(base, home)
    outcome = Outcome(kind, mode, write, "lost")
    try:
        child = run_child(kind, home, session_id, write, mode)
        if child.returncode != -9:
            raise Lost(f"the child was not killed (exit {child.returncode}): {child.stderr[-400:]}")
        outcome.verdict = check_after_kill(kind, home, session_id, ref, write, mode, outcome)
    except Lost as exc:
        outcome.reason = str(exc)
    except Exception as exc:  # any other failure is a finding too, never a crash of the fuzzer
        outcome.reason = f"{type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return outcome


def check_after_kill(
    kind: str, home: Path, session_id: str, ref: Reference, write: int, mode: str, outcome: Outcome
) -> str:
    store = open_store(kind, home)
    loaded = Session.open(store, session_id)  # 1. it loads
    outcome.warnings.extend(loaded.warnings)
    committed = write if mode == "after" else write - 1
    floor = len(ref.before) + sum(ref.batches[:committed])
    found = encoded(loaded.events)
    # A torn JSONL batch keeps the complete lines before the tear (the store drops only the torn
    # last line): a prefix of the batch may load, and must equal the reference's events.
    ceiling = floor + (ref.batches[write - 1] - 1 if mode == "torn" else 0)
    if not floor <= len(found) <= ceiling or found != ref.after[: len(found)]:
        first = next(
            (i for i, (a, b) in enumerate(zip(found, ref.after, strict=False)) if a != b), None
        )
        raise Lost(
            f"{len(found)} events loaded, {floor} committed (at most {ceiling} may load); "
            f"first difference at seq {first}"
        )
    check_plan_first(loaded.events[len(ref.before) :])  # 3.
    session = Session(store.open(session_id, writable=True), clock=lambda: CLOCK_MS)
    try:
        outcome.warnings.extend(session.warnings)
        verdict = resume_or_absent(session, ref)  # 4.
        later_pass(session)  # 5.
    finally:
        session.close()
    return verdict


def check_plan_first(pass_events: Any) -> None:
    plan_seen = False
    for event in pass_events:
        if isinstance(event, CompactionPlanEvent):
            plan_seen = True
        elif isinstance(event, CompactionSummaryEvent) and not plan_seen:
            raise Lost(f"seq {event.seq}: a summary was committed before the pass's plan")
        elif is_replacement_surface_event(event) and not plan_seen:
            raise Lost(f"seq {event.seq}: a replace was committed before the pass's plan")


def resume_or_absent(session: Session, ref: Reference) -> str:
    engine = CompactionEngine(session, RecallableBackend(_NoModel(), SETTINGS), SETTINGS)
    pending = engine.incomplete_plan()
    landed = pass_regions(session.events, "pass1")
    if pending is not None:
        asyncio.run(engine.compact_if_needed("pressure", turn=None, window=10**9))  # a pre-step
        if engine.incomplete_plan() is not None:
            raise Lost("the next pre-step left the plan incomplete")
        if pass_regions(session.events, "pass1") != ref.regions:
            raise Lost("the resumed pass differs from the reference pass")
        return "resumed"
    if landed == ref.regions and ref.regions:
        return "complete"
    if landed:
        raise Lost(f"{len(landed)} of {len(ref.regions)} regions landed but no plan is pending")
    if tuple(session.nodes) != ref.before_nodes:
        raise Lost("no region landed but the surface changed")
    if engine.live_orphan() is not None:
        raise Lost("the killed pass's compaction/start still blocks compaction")
    return "absent"


def later_pass(session: Session) -> None:
    append_turns(session, 6, tag="later")
    ids = itertools.count(1)
    engine = CompactionEngine(
        session,
        RecallableBackend(ExtractiveSummarizer(), SETTINGS),
        SETTINGS,
        new_id=lambda: f"later{next(ids)}",
    )
    result = asyncio.run(engine.compact_now(window=WINDOW))
    if result is None or not result.checkpoints:
        raise Lost("a later pass found nothing to compact")
    ends = [e for e in session.events if isinstance(e, CompactionEndEvent)]
    if ends[-1].data.error is not None or engine.live_orphan() is not None:
        raise Lost(f"the later pass did not end cleanly: {ends[-1].data.error}")
    starts = [e for e in session.events if isinstance(e, CompactionStartEvent)]
    if starts[-1].data.pass_id != result.pass_id:
        raise Lost("the later pass's bracket is not the last one")


# ---- the fuzzer -------------------------------------------------------------------------------


def kill_points(ref: Reference, every: int) -> list[int]:
    total = len(ref.batches)
    points = list(range(1, total + 1, every))
    return points if total in points else [*points, total]


def fuzz(
    kind: str, work: Path, *, every: int = 1, points: list[int] | None = None
) -> tuple[Reference, list[Outcome]]:
    base = work / f"{kind}-base"
    session_id = build(kind, base)
    ref = reference(kind, base, session_id, work)
    chosen = points if points is not None else kill_points(ref, every)
    outcomes = [
        try_point(kind, base, session_id, ref, write, mode, work)
        for mode in MODES[kind]
        for write in chosen
    ]
    return ref, outcomes


def summary(kind: str, ref: Reference, outcomes: list[Outcome]) -> dict[str, Any]:
    verdicts = Counter(o.verdict for o in outcomes)
    return {
        "store": kind,
        "pass_writes": len(ref.batches),
        "pass_events": sum(ref.batches),
        "regions": len(ref.regions),
        "tried": len(outcomes),
        "loaded_clean": sum(o.clean for o in outcomes),
        "absent": verdicts["absent"],
        "complete": verdicts["complete"],
        "resumed": verdicts["resumed"],
        "lost": verdicts["lost"],
        "lost_points": [f"{o.mode}:{o.write}: {o.reason}" for o in outcomes if not o.clean],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", choices=[*STORES, "both"], default="both")
    parser.add_argument("--every", type=int, default=1, help="try every K-th write")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    kinds = STORES if args.store == "both" else (args.store,)
    results = []
    with tempfile.TemporaryDirectory(prefix="dsh-kill-") as tmp:
        for kind in kinds:
            ref, outcomes = fuzz(kind, Path(tmp), every=args.every)
            results.append(summary(kind, ref, outcomes))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for row in results:
        print(
            f"{row['store']}: a pass of {row['regions']} regions = {row['pass_writes']} writes "
            f"({row['pass_events']} events); kill points tried {row['tried']} "
            f"(modes {', '.join(MODES[row['store']])}): loaded-clean {row['loaded_clean']} "
            f"(absent {row['absent']}, complete {row['complete']}, resumed {row['resumed']}), "
            f"lost {row['lost']}"
        )
        for line in row["lost_points"]:
            print(f"  LOST {line}")


if __name__ == "__main__":
    main()
