"""Loop overhead benchmark: what the agent loop itself costs per step, and whether that grows.

Drives a scripted session of ``--steps`` model calls (default 500) through the real ``Agent``:
a ``JsonlStore`` in a temporary directory (durability on: background fsync at step/end and
turn/end), ``ApprovalPolicy("auto")``, the default tools, and the keyless ``ScriptedProvider``
with the simulated DeepSeek prompt cache and no simulated latency. The script comes from a
fixed seed: turns of 2-8 steps, each step but the last of a turn making one small read tool
call (``read_file`` whole or windowed, ``list_dir``, ``glob``, ``grep``, ``todo_write``) in a
small workspace; the last step of a turn answers in text. As in the CLI, every turn runs in its
own ``asyncio.run``. The session is run ``--repeat`` times (default 5).

Measured, all wall clock (``time.perf_counter``):

* total: from the first turn to the return of the last (including its final fsync wait);
* provider: inside ``ScriptedProvider.stream`` and each step of its async iteration, through a
  timing proxy. It includes the provider's own O(session) work (counting model calls in the
  log, pricing and cache-matching the whole request), which is why it is kept apart;
* tools: inside ``ToolRegistry.execute`` (wall time while at least one call runs);
* harness overhead = total - provider - tools: building requests from the log, assembling the
  stream, validating, encoding and writing events, asyncio, ...; and two parts of it:
  logging (inside ``Session.append`` and ``Session.sync``) and request building (inside the
  loop's ``request_from_state``, i.e. ``derive_messages`` over the whole surface);
* per step: the same split between consecutive ``step/end`` appends. For each step the minimum
  over the repeats is kept (one-off stalls from other processes or a slow fsync drop out), and
  the mean of steps 26-50 is compared with the mean of the last 25 steps.

Totals are those of the fastest run. Targets: <= 5 ms harness overhead per step; late/early
per-step overhead <= 1.5 x (independent of session length). A missed target is reported,
never an error exit.

Run: ``uv run python benchmarks/loop_overhead.py [--steps N] [--seed S] [--repeat R] [--dir D]
[--json]``
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from dsh.agent import Agent, AgentConfig, request_from_state, system_prompt
from dsh.bench.runner import BENCH_ENVIRONMENT
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
    """Times tools, logging and request building on the live objects; at every ``step/end``
    it snapshots the cumulative clocks, so each step's split can be recovered."""

    CLOCKS = ("wall", "provider", "tools", "logging", "request")

    def __init__(self, session: Session, tools: ToolRegistry, provider: TimedProvider) -> None:
        self.provider = provider.span
        self.tools, self.logging, self.request = Span(), Span(), Span()
        self.start = 0.0
        self.marks: list[dict[str, float]] = []
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

    def timed_request_from_state(self, *args: Any, **kwargs: Any) -> ModelRequest:
        """Patched in for the loop's ``request_from_state`` (the header + derive_messages)."""
        self.request.enter()
        try:
            return request_from_state(*args, **kwargs)
        finally:
            self.request.exit()

    def begin(self) -> None:
        self.start = time.perf_counter()

    def snapshot(self) -> dict[str, float]:
        """Cumulative seconds since ``begin``: wall clock and each timed part."""
        return {
            "wall": time.perf_counter() - self.start,
            "provider": self.provider.elapsed,
            "tools": self.tools.elapsed,
            "logging": self.logging.elapsed,
            "request": self.request.elapsed,
        }

    def steps(self) -> list[dict[str, float]]:
        """Per step (between consecutive step/end appends): its seconds of each clock, plus
        ``overhead`` = wall - provider - tools."""
        out, previous = [], dict.fromkeys(self.CLOCKS, 0.0)
        for mark in self.marks:
            step = {k: mark[k] - previous[k] for k in self.CLOCKS}
            step["overhead"] = step["wall"] - step["provider"] - step["tools"]
            out.append(step)
            previous = mark
        return out


# ---- the run --------------------------------------------------------------------------------


@dataclass
class Run:
    info: dict[str, Any]
    """What the session was: steps, turns, events, log size, token usage."""
    totals: dict[str, float]
    """Seconds per clock (``Probe.CLOCKS``) plus ``overhead``, over the whole session."""
    steps: list[dict[str, float]]
    """The same split per step, plus ``rest`` = overhead - request building."""


def run_session(root: Path, steps: int, seed: int) -> Run:
    """One scripted session of ``steps`` model calls through the real loop, timed."""
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
            system=system_prompt(workspace, BENCH_ENVIRONMENT),
            context_window=1_000_000,
            max_steps=max(turns),
            retry_base_delay=0.0,
        ),
        workspace=workspace,
    )
    with mock.patch("dsh.agent.loop.request_from_state", probe.timed_request_from_state):
        probe.begin()
        for turn in range(1, len(turns) + 1):
            result = asyncio.run(agent.run_turn(f"Turn {turn}: please look around and report."))
            if result.reason != "completed":
                raise SystemExit(f"turn {result.turn} ended {result.reason}: {result.error}")
        totals = probe.snapshot()
    usages = [
        e.data.usage
        for e in session.events
        if isinstance(e, AssistantMessageEvent) and e.data.usage is not None
    ]
    info = {
        "steps": steps,
        "turns": len(turns),
        "events": len(session.events),
        "surface_nodes": len(session.nodes),
        "log_bytes": session._log.path.stat().st_size,  # type: ignore[attr-defined]
        "input_tokens": sum(u.input_tokens for u in usages),
        "cache_read_tokens": sum(u.cache_read_tokens or 0 for u in usages),
    }
    session.close()
    totals["overhead"] = totals["wall"] - totals["provider"] - totals["tools"]
    per_step = probe.steps()
    assert len(per_step) == steps, (len(per_step), steps)
    for step in per_step:
        step["rest"] = step["overhead"] - step["request"]
    return Run(info, totals, per_step)


def summarize(runs: list[Run]) -> dict[str, Any]:
    """Totals of the fastest run; per-step figures as the minimum over runs of each step's
    figure (filters out one-off stalls: other processes, a slow fsync), averaged per window."""
    best = min(runs, key=lambda r: r.totals["wall"])
    figures: dict[str, Any] = {**best.info, "repeats": len(runs)}
    figures.update({f"{k}_s": v for k, v in best.totals.items()})
    figures["overhead_per_step_ms"] = best.totals["overhead"] / best.info["steps"] * 1000
    keys = list(runs[0].steps[0])
    per_step = [
        {k: min(r.steps[i][k] for r in runs) for k in keys} for i in range(best.info["steps"])
    ]
    for name, part in (
        ("early", per_step[EARLY_END - WINDOW : EARLY_END]),
        ("late", per_step[-WINDOW:]),
    ):
        for key in ("overhead", "logging", "request", "rest", "provider"):
            figures[f"{name}_{key}_ms"] = statistics.fmean(s[key] for s in part) * 1000
    for key in ("overhead", "rest"):
        figures[f"late_over_early_{key}"] = figures[f"late_{key}_ms"] / figures[f"early_{key}_ms"]
    return figures


def report(f: dict[str, Any], seed: int) -> None:
    def verdict(ok: bool, target: str) -> str:
        return f"target {target:<8} {'PASS' if ok else 'MISS'}"

    def total(key: str, of_overhead: bool = False) -> str:
        share = f" ({f[key] / f['overhead_s']:.0%})" if of_overhead else ""
        return f"{f[key] * 1000:.0f} ms{share}"

    steps, total_in = f["steps"], f["cache_read_tokens"] + f["input_tokens"]
    print(
        f"session: {steps} steps in {f['turns']} turns, {f['events']:,} events, "
        f"{f['surface_nodes']:,} surface nodes, {f['log_bytes'] / 1024:.0f} KiB log; "
        f"seed {seed}, best of {f['repeats']} runs"
    )
    print(f"simulated cache: {f['cache_read_tokens'] / max(1, total_in):.1%} of input tokens hit")
    per_step = f["overhead_per_step_ms"]
    rows = [
        ("total wall time", total("wall_s"), ""),
        ("  provider (scripted stream)", total("provider_s"), ""),
        ("  tools (ToolRegistry.execute)", total("tools_s"), ""),
        ("  harness overhead", total("overhead_s"), ""),
        ("    logging (Session.append + sync)", total("logging_s", True), ""),
        ("    request building (derive_messages)", total("request_s", True), ""),
        (
            "harness overhead per step",
            f"{per_step:.2f} ms",
            verdict(per_step <= OVERHEAD_TARGET_MS, f"<= {OVERHEAD_TARGET_MS:g} ms"),
        ),
    ]
    for name, value, target in rows:
        print(f"{name:<40} {value:>12}   {target}".rstrip())

    early = f"steps {EARLY_END - WINDOW + 1}-{EARLY_END}"
    late = f"steps {steps - WINDOW + 1}-{steps}"
    ratio, rest = f["late_over_early_overhead"], f["late_over_early_rest"]
    print(f"\nper step, ms (mean of {WINDOW}) {early:>17} {late:>15}   late/early")
    table = [
        (
            "harness overhead",
            "overhead",
            f"{ratio:.2f} x  " + verdict(ratio <= RATIO_TARGET, f"<= {RATIO_TARGET:g} x"),
        ),
        ("  logging", "logging", ""),
        ("  request building", "request", ""),
        ("  overhead without request building", "rest", f"{rest:.2f} x"),
        ("provider (for reference)", "provider", ""),
    ]
    for name, key, note in table:
        first, last = f[f"early_{key}_ms"], f[f"late_{key}_ms"]
        print(f"{name:<36} {first:>9.2f} {last:>15.2f}   {note}".rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5, help="sessions to run (default 5)")
    parser.add_argument("--dir", type=Path, help="where runs keep their files (default: temp)")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    if args.steps < EARLY_END + WINDOW:
        parser.error(f"--steps must be at least {EARLY_END + WINDOW}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as tmp:
        root = args.dir or Path(tmp)
        runs = [
            run_session(root / f"run-{i}", args.steps, args.seed) for i in range(1, args.repeat + 1)
        ]
    figures = summarize(runs)
    report(figures, args.seed)
    if args.json:
        rounded = {k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}
        print(json.dumps(rounded))


if __name__ == "__main__":
    main()
