"""Loop overhead benchmark: what the agent loop itself costs per step, and whether that grows.

Drives a scripted session of ``--steps`` model calls (default 500) through the real ``Agent``:
a ``JsonlStore`` in a temporary directory (durability on: background fsync at step/end and
turn/end), ``ApprovalPolicy("auto")``, the default tools, and the keyless ``ScriptedProvider``
with the simulated DeepSeek prompt cache and no simulated latency. The script is made from a
fixed seed: turns of 2-8 steps, each step but the last of a turn making one small read tool
call (``read_file`` whole or windowed, ``list_dir``, ``glob``, ``grep``, ``todo_write``) against
a small workspace; the last step of a turn answers in text. As the CLI does, every turn runs
in its own ``asyncio.run``.

Measured, all wall clock (``time.perf_counter``):

* total: from the first turn to the return of the last (including its final fsync wait);
* provider: inside ``ScriptedProvider.stream`` and each step of its async iteration, through a
  timing proxy. This includes the provider's own O(session) work (counting model calls in the
  log, pricing and cache-matching the whole request), which is why it is kept apart;
* tools: inside ``ToolRegistry.execute`` (wall time while at least one call runs);
* harness overhead = total - provider - tools: building requests from the log, assembling the
  stream, validating, encoding and writing events, asyncio, hooks, ...;
* logging: inside ``Session.append`` and ``Session.sync``, as a share of the overhead;
* per step: the same split between consecutive ``step/end`` appends, so the mean overhead of
  steps 26-50 can be compared with that of the last 25 steps.

Targets: <= 5 ms overhead per step; late/early per-step overhead <= 1.5 (independent of session
length). A missed target is reported, never an error exit.

Run: ``uv run python benchmarks/loop_overhead.py [--steps N] [--seed S] [--dir D] [--json]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from dsh.agent import Agent, AgentConfig, system_prompt
from dsh.events import AssistantMessageEvent, Event, StepEnd
from dsh.llm.scripted import ScriptedProvider, parse_script
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolOutput
from dsh.tools.registry import ToolRegistry, default_tools

WINDOW = 25  # steps averaged for "overhead at step 50" and "at the last step"
EARLY_END = 50
OVERHEAD_TARGET_MS = 5.0
RATIO_TARGET = 1.5

WORKSPACE = {
    "README.md": "# demo\n\nA tiny project the benchmark's tools look at.\n" * 6,
    "pyproject.toml": '[project]\nname = "demo"\nversion = "0.1.0"\n',
    "src/demo/__init__.py": '"""demo."""\n\nfrom demo.core import add, scale\n',
    "src/demo/core.py": "".join(
        f"def f{i}(x: int) -> int:\n    return x * {i} + {i % 7}\n\n\n" for i in range(30)
    )
    + "def add(a, b):\n    return a + b\n\n\ndef scale(v, k):\n    return [x * k for x in v]\n",
    "src/demo/util.py": "import os\n\n\ndef env(name):\n    return os.environ.get(name, '')\n",
    "tests/test_core.py": "from demo import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "docs/guide.md": "\n".join(f"- point {i}: keep it short" for i in range(40)) + "\n",
}
FILES = sorted(WORKSPACE)


# ---- the scripted session -------------------------------------------------------------------


def make_workspace(root: Path) -> None:
    for name, text in WORKSPACE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def tool_call(rng: random.Random, step: int) -> dict[str, Any]:
    """One small read-only tool call, varied."""
    kind = rng.choices(
        ["read", "window", "list", "glob", "grep", "todo"], weights=[5, 2, 2, 1, 1, 1]
    )[0]
    if kind == "read":
        return {"name": "read_file", "arguments": {"path": rng.choice(FILES)}}
    if kind == "window":
        args = {"path": "src/demo/core.py", "offset": rng.randint(1, 100), "limit": 20}
        return {"name": "read_file", "arguments": args}
    if kind == "list":
        return {"name": "list_dir", "arguments": {"path": rng.choice([".", "src/demo", "docs"])}}
    if kind == "glob":
        return {"name": "glob", "arguments": {"pattern": rng.choice(["**/*.py", "*.md"])}}
    if kind == "grep":
        return {"name": "grep", "arguments": {"pattern": rng.choice(["def ", "import"])}}
    todos = [
        {"content": f"task {step}-{i}", "status": "completed" if i < 2 else "pending"}
        for i in range(4)
    ]
    return {"name": "todo_write", "arguments": {"todos": todos}}


def make_script(steps: int, rng: random.Random) -> tuple[list[int], list[dict[str, Any]]]:
    """Turn lengths (summing to ``steps``) and one script entry per step."""
    turns: list[int] = []
    while sum(turns) < steps:
        turns.append(min(rng.randint(2, 8), steps - sum(turns)))
    entries: list[dict[str, Any]] = []
    for length in turns:
        for i in range(1, length + 1):
            n = len(entries) + 1
            if i < length:
                text = f"Step {n}: looking at one more thing before answering."
                entries.append({"text": text, "toolCalls": [tool_call(rng, n)]})
            else:
                entries.append({"text": f"Done after {length} steps. " * rng.randint(1, 8)})
    return turns, entries


# ---- timing proxies -------------------------------------------------------------------------


class Span:
    """Wall time during which at least one timed call was running (overlaps count once)."""

    def __init__(self) -> None:
        self.elapsed = 0.0
        self._active = 0
        self._since = 0.0

    def enter(self) -> None:
        if self._active == 0:
            self._since = time.perf_counter()
        self._active += 1

    def exit(self) -> None:
        self._active -= 1
        if self._active == 0:
            self.elapsed += time.perf_counter() - self._since


class TimedProvider:
    """The same ``stream(request, *, history)`` API; times the call and every ``__anext__``."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.span = Span()

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        self.span.enter()
        try:
            events = self.inner.stream(request, history=history)
        finally:
            self.span.exit()
        return self._iterate(events)

    async def _iterate(self, events: AsyncIterator[StreamEvent]) -> AsyncIterator[StreamEvent]:
        while True:
            self.span.enter()
            try:
                event = await anext(events)
            except StopAsyncIteration:
                return
            finally:
                self.span.exit()
            yield event


class Probe:
    """Times tools and logging on the live objects, and snapshots the clocks at every step/end."""

    def __init__(self, session: Session, tools: ToolRegistry, provider: TimedProvider) -> None:
        self.provider = provider
        self.tools = Span()
        self.logging = Span()
        self.start = 0.0
        self.marks: list[tuple[float, float, float, float]] = []
        """Per step/end: (wall, provider, tools, logging) cumulative seconds since ``start``."""
        inner_execute, inner_append, inner_sync = tools.execute, session.append, session.sync

        async def execute(*args: Any, **kwargs: Any) -> ToolOutput:
            self.tools.enter()
            try:
                return await inner_execute(*args, **kwargs)
            finally:
                self.tools.exit()

        def append(payload: Any, **kwargs: Any) -> Event:
            self.logging.enter()
            try:
                event = inner_append(payload, **kwargs)
            finally:
                self.logging.exit()
            if type(payload) is StepEnd:
                self.marks.append(self.snapshot())
            return event

        def sync() -> None:
            self.logging.enter()
            try:
                inner_sync()
            finally:
                self.logging.exit()

        tools.execute = execute  # type: ignore[method-assign]
        session.append = append  # type: ignore[method-assign]
        session.sync = sync  # type: ignore[method-assign]

    def begin(self) -> None:
        self.start = time.perf_counter()

    def snapshot(self) -> tuple[float, float, float, float]:
        wall = time.perf_counter() - self.start
        return wall, self.provider.span.elapsed, self.tools.elapsed, self.logging.elapsed

    def step_overheads(self) -> list[float]:
        """Seconds of harness overhead in each step (between consecutive step/end appends)."""
        out, previous = [], (0.0, 0.0, 0.0, 0.0)
        for mark in self.marks:
            wall, provider, tools, _ = (now - then for now, then in zip(mark, previous))
            out.append(wall - provider - tools)
            previous = mark
        return out


# ---- the run --------------------------------------------------------------------------------


def run(root: Path, steps: int, seed: int) -> dict[str, Any]:
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    make_workspace(workspace)
    turns, entries = make_script(steps, random.Random(seed))
    session = Session.create(JsonlStore(root / "home"), cwd=workspace)
    scripted = ScriptedProvider(parse_script(entries), model="scripted", cache="deepseek")
    provider = TimedProvider(scripted)
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
            system=system_prompt(workspace),
            context_window=1_000_000,
            max_steps=max(turns),
            retry_base_delay=0.0,
        ),
        workspace=workspace,
    )
    probe.begin()
    for turn, _ in enumerate(turns, 1):
        result = asyncio.run(agent.run_turn(f"Turn {turn}: please look around and report."))
        if result.reason != "completed":
            raise SystemExit(f"turn {result.turn} ended {result.reason}: {result.error}")
    total, provider_s, tools_s, logging_s = probe.snapshot()
    events = len(session.events)
    usages = [
        e.data.usage
        for e in session.events
        if isinstance(e, AssistantMessageEvent) and e.data.usage is not None
    ]
    log_bytes = session._log.path.stat().st_size  # type: ignore[attr-defined]
    session.close()
    per_step = probe.step_overheads()
    assert len(per_step) == steps, (len(per_step), steps)
    early = per_step[EARLY_END - WINDOW : EARLY_END]
    late = per_step[-WINDOW:]
    overhead = total - provider_s - tools_s
    return {
        "steps": steps,
        "turns": len(turns),
        "events": events,
        "log_bytes": log_bytes,
        "total_s": total,
        "provider_s": provider_s,
        "tools_s": tools_s,
        "overhead_s": overhead,
        "logging_s": logging_s,
        "overhead_per_step_ms": overhead / steps * 1000,
        "early_ms": statistics.fmean(early) * 1000,
        "late_ms": statistics.fmean(late) * 1000,
        "early_median_ms": statistics.median(early) * 1000,
        "late_median_ms": statistics.median(late) * 1000,
        "input_tokens": sum(u.input_tokens for u in usages),
        "cache_read_tokens": sum(u.cache_read_tokens or 0 for u in usages),
    }


def report(f: dict[str, Any], seed: int) -> None:
    def mark(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    steps, ms = f["steps"], 1000
    ratio = f["late_ms"] / f["early_ms"]
    hit = f["cache_read_tokens"] / max(1, f["cache_read_tokens"] + f["input_tokens"])
    early = f"steps {EARLY_END - WINDOW + 1}-{EARLY_END}"
    late = f"steps {steps - WINDOW + 1}-{steps}"
    print(
        f"session: {steps} steps in {f['turns']} turns, {f['events']:,} events, "
        f"{f['log_bytes'] / 1024:.0f} KiB log, seed {seed}; cache hit {hit:.0%} of input tokens"
    )
    rows = [
        ("total wall time", f"{f['total_s'] * ms:.0f} ms", "", None),
        ("  provider (scripted stream)", f"{f['provider_s'] * ms:.0f} ms", "", None),
        ("  tools (ToolRegistry.execute)", f"{f['tools_s'] * ms:.0f} ms", "", None),
        ("  harness overhead", f"{f['overhead_s'] * ms:.0f} ms", "", None),
        (
            "    of which logging (append+sync)",
            f"{f['logging_s'] * ms:.0f} ms ({f['logging_s'] / f['overhead_s']:.0%})",
            "",
            None,
        ),
        (
            "overhead per step (mean)",
            f"{f['overhead_per_step_ms']:.2f} ms",
            f"<= {OVERHEAD_TARGET_MS:g} ms",
            f["overhead_per_step_ms"] <= OVERHEAD_TARGET_MS,
        ),
        (f"overhead per step, {early}", f"{f['early_ms']:.2f} ms", "", None),
        (f"  (median {early})", f"{f['early_median_ms']:.2f} ms", "", None),
        (f"overhead per step, {late}", f"{f['late_ms']:.2f} ms", "", None),
        (f"  (median {late})", f"{f['late_median_ms']:.2f} ms", "", None),
        ("late / early overhead per step", f"{ratio:.2f} x", f"<= {RATIO_TARGET:g} x",
         ratio <= RATIO_TARGET),
    ]
    for name, value, target, ok in rows:
        verdict = f"target {target:<9} {mark(ok)}" if ok is not None else ""
        print(f"{name:<37} {value:>16}   {verdict}".rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, help="where to put workspace and store (default: temp)")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    if args.steps < EARLY_END + WINDOW:
        parser.error(f"--steps must be at least {EARLY_END + WINDOW}")
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as tmp:
        figures = run(args.dir or Path(tmp), args.steps, args.seed)
    report(figures, args.seed)
    if args.json:
        rounded = {k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}
        rounded["late_over_early"] = round(figures["late_ms"] / figures["early_ms"], 2)
        print(json.dumps(rounded))


if __name__ == "__main__":
    main()
