"""Growth of per-step, per-command and compaction costs with session length (1k/10k/100k events).

For each size a JSONL session is prefilled with that many events of chat-and-tool turns (an
assistant message with provider usage per step, a tool result, turn and step brackets); every
400 events the older surface is replaced by one checkpoint, as compaction would, so the surface
(and the request) stays small while the log grows. Then, on that log:

* ``open``: ``Session.open`` (read, decode, validate, fold) — the cost of every per-command open;
  its same-run baseline is a bare ``msgspec.json`` decode of the same lines (``open/decode``);
* ``first step`` / ``step``: harness overhead (wall - provider - tools) of the first step after
  opening and the mean of the next steps (``--repeat`` opens, one turn each; the minimum over
  repeats of each step, so one-off stalls from other processes drop out), through the real
  ``Agent`` with the compaction engine as its pre-step hook (default compaction settings, the
  extractive summarizer), the keyless ``ScriptedProvider`` and the default tools, as in
  ``loop_overhead.py``;
* ``measure``: one ``Session.measure()`` after the turn (anchored on its last usage) and one
  ``compact_if_needed`` below the threshold, medians of 51 and 21 calls.

Printed: each figure per size and the growth factor against the 1k figure (target for per-step
costs: flat, 100k/1k <= 1.2x). A missed target is reported, never an error exit.

Run: ``uv run python benchmarks/scaling.py [--sizes 1000,10000,100000] [--steps 8]
[--repeat 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import msgspec

sys.path.insert(0, str(Path(__file__).parent))
from dsh.agent import Agent, AgentConfig, system_prompt
from dsh.agent.hooks import compaction_hooks
from dsh.bench.runner import BENCH_ENVIRONMENT
from dsh.compaction import CompactionEngine, make_backend, make_summarizer
from dsh.config import Settings
from dsh.events import (
    AssistantMessage,
    Message,
    ModelSource,
    PluginSource,
    ReplaceOp,
    StepEnd,
    StepStart,
    TextBlock,
    ToolCallBlock,
    ToolResult,
    ToolResultBlock,
    ToolSource,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    Usage,
    UserSource,
)
from dsh.llm.scripted import ScriptedProvider, count_model_calls, parse_script
from dsh.store import JsonlStore
from dsh.surface import Draft, Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.registry import ToolRegistry, default_tools
from loop_overhead import Probe, TimedProvider, make_script, make_workspace

COMPACT_EVERY = 400
FLAT_TARGET = 1.2


def _turn(turn: int, rng: random.Random) -> list[Draft]:
    text = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "file.py"]) for _ in range(30))
    call = ToolCallBlock(id=f"c{turn}", name="read_file", arguments='{"path": "README.md"}')
    model = ModelSource(provider="scripted", model="scripted")
    asks = Message(
        id=f"a{turn}", role="assistant", content=(TextBlock(text=text), call), source=model
    )
    block = ToolResultBlock(tool_call_id=f"c{turn}", content=(TextBlock(text=text * 3),))
    result = Message(
        id=f"r{turn}", role="tool", content=(block,), source=ToolSource(call_id=f"c{turn}")
    )
    user = Message(id=f"u{turn}", role="user", content=(TextBlock(text=text),), source=UserSource())
    usage = Usage(input_tokens=4000, output_tokens=60)
    return [
        Draft(TurnStart(turn=turn)),
        Draft(StepStart(turn=turn, step=1)),
        Draft(user),
        Draft(AssistantMessage(turn=turn, step=1, message=asks, usage=usage)),
        Draft(ToolResult(turn=turn, step=1, message=result)),
        Draft(StepEnd(turn=turn, step=1)),
        Draft(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed"))),
    ]


def prefill(store: JsonlStore, cwd: Path, events: int) -> tuple[str, int]:
    """A session of about ``events`` events whose surface is kept small by checkpoints."""
    rng = random.Random(13)
    session = Session.create(store, cwd=cwd)
    turn, since = 0, 0
    while len(session.events) < events:
        turn += 1
        session.append_many(_turn(turn, rng))
        since += 7
        if since >= COMPACT_EVERY and len(session.nodes) > 6:
            nodes = session.nodes
            old = nodes[: len(nodes) - 3]
            checkpoint = Message(
                id=f"k{turn}",
                role="user",
                content=(
                    TextBlock(text=f"<compacted-summary>turns up to {turn}</compacted-summary>"),
                ),
                source=PluginSource(plugin="compact", compaction_id=f"k{turn}"),
            )
            session.append(
                checkpoint, surface_op=ReplaceOp(start=old[0], end=old[-1]), source_event_seqs=old
            )
            since = 0
    session.sync()
    session.close()
    return session.id, turn


def timed(work, repeat: int = 1) -> float:  # type: ignore[no-untyped-def]
    """Median seconds of ``work()``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def one_turn(
    store: JsonlStore, session_id: str, workspace: Path, steps: int
) -> tuple[Session, CompactionEngine, list[float]]:
    """Open the session writable and run one turn of ``steps`` steps through the real loop;
    returns the session (still open), its engine and the harness overhead of each step."""
    session = Session.open(store, session_id, writable=True)
    _, entries = make_script(steps, random.Random(7))
    used = count_model_calls(session.events)  # the prefill's model calls used entries 0..used-1
    script = [{"text": "prefilled"}] * used + entries
    scripted = ScriptedProvider(parse_script(script), model="scripted", cache="deepseek")
    provider = TimedProvider(scripted)
    settings = Settings().compaction.for_route("scripted", "scripted")
    backend = make_backend(settings, make_summarizer(settings, None, None))
    assert backend is not None
    engine = CompactionEngine(session, backend, settings)
    pre_step, overflow = compaction_hooks(engine)
    tools = ToolRegistry(default_tools())
    probe = Probe(session, tools, provider)
    agent = Agent(
        session,
        provider,
        tools,
        ApprovalPolicy("auto"),
        config=AgentConfig(
            provider="scripted",
            model="scripted",
            system=system_prompt(workspace, BENCH_ENVIRONMENT),
            context_window=1_000_000,
            max_steps=steps + 1,
            retry_base_delay=0.0,
        ),
        workspace=workspace,
        pre_step_hooks=[pre_step],
        overflow_handler=overflow,
    )
    with mock.patch("dsh.agent.loop.request_from_state", probe.timed_request_from_state):
        probe.begin()
        result = asyncio.run(agent.run_turn("one long turn"))
        if result.reason != "completed":
            raise SystemExit(f"turn ended {result.reason}: {result.error}")
    per_step = [s["overhead"] for s in probe.steps()]
    return session, engine, per_step


def measure_size(root: Path, events: int, steps: int, repeat: int) -> dict[str, float]:
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    make_workspace(workspace)
    store = JsonlStore(root / "home")
    session_id, _ = prefill(store, workspace, events)
    path = next((root / "home").rglob("*.jsonl"))
    figures: dict[str, float] = {}
    decoder = msgspec.json.Decoder()

    def bare_decode() -> None:
        with path.open("rb") as lines:
            for line in lines:
                decoder.decode(line)

    figures["open/decode"] = timed(bare_decode, 3)
    figures["open"] = timed(lambda: Session.open(store, session_id).close(), 3)
    figures["open/ratio"] = figures["open"] / figures["open/decode"]

    firsts: list[float] = []
    later: list[list[float]] = []
    for _ in range(repeat):  # each repeat opens the log afresh: the first step is cold again
        session, engine, per_step = one_turn(store, session_id, workspace, steps)
        firsts.append(per_step[0])
        later.append(per_step[1:])
        if len(firsts) < repeat:
            session.close()
    figures["first step"] = min(firsts)
    figures["step"] = statistics.mean(min(column) for column in zip(*later, strict=True))

    figures["measure"] = timed(lambda: session.measure(), 51)
    figures["compact_if_needed"] = timed(
        lambda: asyncio.run(engine.compact_if_needed("pressure", turn=None, window=1_000_000)), 21
    )
    session.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, dict[str, float]] = {}
    for size in sizes:
        with tempfile.TemporaryDirectory() as root:
            results[size] = measure_size(Path(root), size, args.steps, args.repeat)
    base = sizes[0]
    names = list(results[base])
    header = f"{'figure':22s}" + "".join(f"{s:>12,d}" for s in sizes)
    print(header + "".join(f"  {s // base}x/1x" for s in sizes[1:]))
    for name in names:
        unit, scale = ("x", 1.0) if name.endswith("ratio") else ("ms", 1000.0)
        row = f"{name:22s}" + "".join(f"{results[s][name] * scale:10.3f}{unit:>2s}" for s in sizes)
        growth = [results[s][name] / results[base][name] for s in sizes[1:]]
        row += "".join(f"  {g:7.2f}x" for g in growth)
        if name in ("first step", "step", "measure", "compact_if_needed"):
            row += "  flat" if growth[-1] <= FLAT_TARGET else "  NOT FLAT"
        print(row)


if __name__ == "__main__":
    main()
