"""Costs that grow with a session's length: opening it, reading its settings, the recall tools,
and a step of the agent loop, at 10,000 and 100,000 events.

Each session is ``_web_session.build_session``'s long JSONL session (turns of 1-3 steps,
``read_file`` results of 0.3-3 KB, a ``/compact`` every 250 turns: 33 checkpoints at 100,000
events, 48 MB), its settings recorded before its first turn as a first run records them (so the
last ``session/settings`` line is near the log's start). On each, in CPU time
(``time.process_time``: the machine is shared, and wall time would measure the neighbours), the
best of ``--repeat``:

* ``open``: ``Session.open`` read-only (read, unseal, decode, validate, fold; closing and
  freeing it are left out); baseline ``decode``: a bare ``msgspec.json`` decode of the same
  lines;
* ``settings read``: ``session_settings.read(store, id)``, what ``dsh run --session`` and
  ``dsh --resume`` pay before their writable open; baseline: ``open``;
* ``list_checkpoints``: as the recall tools call it (with the session's per-type index);
  baseline ``scan``: the same list found by walking the log (``list_checkpoints(events)``);
* ``history_search``, ``history_read``: one call of each recall tool through the real agent loop
  (``build_agent`` with the recallable backend and the keyless scripted provider; the CPU inside
  ``ToolRegistry.execute``): a literal query that one checkpoint holds, the first page of the
  newest checkpoint, the span cache warm (the first search of a process renders every span);
  baseline ``walk``: one pass over the log testing each event's type;
* ``step``: the loop's own CPU per step of those turns (a turn's CPU less the provider's and the
  tools'); baseline: ``walk``.
* ``words, few hits``, ``words, many hits``: ``search_history`` (as the tool runs it, the
  session's index given) of a query that no message holds literally, so its words are looked
  for on their own: ``turn 100 heartbeat`` (one message holds enough of them at every size) and
  ``retries of workers`` (most messages do: the hits grow with the log), the span cache warm
  (spans and word indexes in memory); baseline ``literal``: the same call for the literal query;
* ``word lookup, few hits``, ``word lookup, many hits``: the fallback alone, as those calls run
  it (``search_words`` over every checkpoint, then the 25 best hits made); baseline ``literal``;
* ``words, new process``: the few-hits query with a new span cache on the span and word files an
  earlier search stored (``dsh recall search``, a resumed agent); baseline ``literal new``: the
  literal query the same way;
* ``words, first``: the few-hits query with a new span cache and no files (every span rendered,
  lower-cased and its words indexed, once per session); baseline ``literal first``: the literal
  query the same way (every span rendered and lower-cased).

Printed per size: each figure, its baseline and their ratio; then each figure's growth from
the smallest size to the largest next to the log's. A cost paid per step or per call should not
grow with the log; ``open`` must (it reads the log), and so does a literal search (it scans
every checkpoint's originals); a search by words grows with the messages holding its words.

Run: ``uv run python benchmarks/session_scale.py [--sizes 10000,100000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec

sys.path.insert(0, str(Path(__file__).parent))
from _web_session import build_session
from dsh.agent import session_settings
from dsh.agent.runtime import Route
from dsh.agent.wiring import build_agent
from dsh.bench.runner import BENCH_ENVIRONMENT
from dsh.config import Settings
from dsh.events import CompactionSummaryEvent, Event
from dsh.llm.scripted import ScriptedProvider, count_model_calls
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.recall import SpanCache, list_checkpoints, search_history
from dsh.recall.word_search import query_terms, search_words
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.tools.approval import ApprovalPolicy
from dsh.tools.base import ToolContext, ToolOutput
from dsh.tools.registry import ToolRegistry

READS_PER_TURN = 4
"""``read_file`` steps in each timed turn, after its search and its read."""
QUERY = "Turn 100:"
"""Held by one message of the first checkpoint at every size (a literal hit)."""
FEW_HITS = "turn 100 heartbeat"
"""No message holds it literally; one holds two of its three words, at every size."""
MANY_HITS = "retries of workers"
"""No message holds it literally; most hold one of its two words."""


def cpu_best(
    repeat: int, work: Callable[[], object], after: Callable[[object], object] = bool
) -> float:
    """The least CPU seconds of ``repeat`` runs of ``work``; ``after`` gets what it returned,
    off the clock (freeing a loaded log is not part of loading it)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        done = work()
        best = min(best, time.process_time() - start)
        after(done)
        del done
    return best


def _close(session: object) -> None:
    assert isinstance(session, Session)
    session.close()


def record_settings(session: Session) -> None:
    snapshot = session_settings.snapshot(
        Settings(), "scripted", "scripted", None, session.header.cwd
    )
    session_settings.record(session, snapshot)


class CpuProvider:
    """The scripted provider, its CPU counted (the call and every step of its stream)."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.cpu = 0.0

    def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        start = time.process_time()
        events = self.inner.stream(request, history=history)
        self.cpu += time.process_time() - start
        return self._iterate(events)

    async def _iterate(self, events: AsyncIterator[StreamEvent]) -> AsyncIterator[StreamEvent]:
        while True:
            start = time.process_time()
            try:
                event = await anext(events)
            except StopAsyncIteration:
                return
            finally:
                self.cpu += time.process_time() - start
            yield event


class ToolClock:
    """The CPU inside ``ToolRegistry.execute``, per tool name and call."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.calls: defaultdict[str, list[float]] = defaultdict(list)
        inner = registry.execute

        async def execute(
            call_id: str, name: str, arguments: str, ctx: ToolContext, policy: ApprovalPolicy
        ) -> ToolOutput:
            start = time.process_time()
            try:
                return await inner(call_id, name, arguments, ctx, policy)
            finally:
                self.calls[name].append(time.process_time() - start)

        registry.execute = execute  # type: ignore[method-assign,assignment]

    def total(self) -> float:
        return sum(sum(times) for times in self.calls.values())


def turn_script(newest: str) -> list[dict[str, Any]]:
    """One turn: a search, a read, ``READS_PER_TURN`` small file reads, an answer."""
    steps: list[dict[str, Any]] = [
        {
            "text": "search",
            "toolCalls": [{"name": "history_search", "arguments": {"query": QUERY}}],
        },
        {
            "text": "read",
            "toolCalls": [{"name": "history_read", "arguments": {"checkpoint": newest}}],
        },
    ]
    for offset in range(1, READS_PER_TURN + 1):
        arguments = {"path": "notes.txt", "offset": offset, "limit": 3}
        steps.append({"text": "file", "toolCalls": [{"name": "read_file", "arguments": arguments}]})
    steps.append({"text": "done"})
    return steps


def agent_figures(root: Path, store: JsonlStore, session_id: str, repeat: int) -> dict[str, float]:
    """Recall calls and the loop's own CPU per step, over ``repeat`` turns (best of each)."""
    workspace = root / "workspace"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text("".join(f"line {i}\n" for i in range(40)))
    session = Session.open(store, session_id, writable=True)
    try:
        newest = f"c{session.of_type(CompactionSummaryEvent)[-1].seq}"
        script = turn_script(newest)
        entries = [{"text": "earlier"}] * count_model_calls(session.events) + script * repeat
        provider = CpuProvider(ScriptedProvider(entries, model="scripted", cache="deepseek"))
        route = Route(provider, "scripted", 1_000_000)
        environ = {"DSH_HOME": str(root / "home")}
        with mock.patch("dsh.agent.wiring.session_environment", lambda *_: BENCH_ENVIRONMENT):
            agent = build_agent(
                session,
                Settings(),
                route,
                workspace=workspace,
                policy=ApprovalPolicy("auto"),
                environ=environ,
            )
        clock = ToolClock(agent.tools)
        steps, per_step = len(script), []
        for _ in range(repeat):
            start, provider_before, tools_before = time.process_time(), provider.cpu, clock.total()
            result = asyncio.run(agent.run_turn("look back"))
            if result.reason != "completed":
                raise SystemExit(f"turn ended {result.reason}: {result.error}")
            spent = time.process_time() - start
            others = (provider.cpu - provider_before) + (clock.total() - tools_before)
            per_step.append((spent - others) / steps)
        return {
            "history_search": min(clock.calls["history_search"]),
            "history_read": min(clock.calls["history_read"]),
            "step": min(per_step),
        }
    finally:
        session.close()


def measure(root: Path, events: int, repeat: int) -> dict[str, tuple[float, float]]:
    """Each figure at one size, with its same-run baseline: ``{name: (figure, baseline)}``."""
    store = JsonlStore(root / "home")
    session_id, _, _ = build_session(store, root, events, 1, prologue=record_settings)
    path = store.log_path(session_id)
    decoder = msgspec.json.Decoder()

    def bare_decode() -> None:
        with path.open("rb") as lines:
            for line in lines:
                decoder.decode(line)

    figures: dict[str, tuple[float, float]] = {}
    opened = cpu_best(repeat, lambda: Session.open(store, session_id), _close)
    figures["open"] = (opened, cpu_best(repeat, bare_decode))
    settings_read = cpu_best(repeat, lambda: session_settings.read(store, session_id))
    figures["settings read"] = (settings_read, opened)
    with Session.open(store, session_id) as session:
        log = session.events
        indexed = cpu_best(repeat, lambda: list_checkpoints(log, session))
        figures["list_checkpoints"] = (indexed, cpu_best(repeat, lambda: list_checkpoints(log)))
        walk = cpu_best(repeat, lambda: sum(type(e) is CompactionSummaryEvent for e in log))
        figures.update(word_figures(root / "recall", session, repeat))
    loop = agent_figures(root, store, session_id, repeat)
    for name in ("history_search", "history_read", "step"):
        figures[name] = (loop[name], walk)
    return figures


def word_figures(span_dir: Path, session: Session, repeat: int) -> dict[str, tuple[float, float]]:
    """The searches by words, each beside the literal search made the same way."""
    events, spans = session.events, span_dir / f"{session.id}.spans"

    def search(query: str, cache: SpanCache) -> object:
        output = search_history(events, query, cache=cache, index=session)
        assert output.meta["matched"] or output.meta.get("byWords"), output.text
        return output

    def new_cache(path: Path | None) -> SpanCache:
        cache = SpanCache()
        cache.use_file(path)
        return cache

    warm = new_cache(spans)  # also stores the span and word files the new processes read
    for query in (QUERY, FEW_HITS, MANY_HITS):
        search(query, warm)
    targets = list_checkpoints(events, session)

    def lookup(query: str) -> object:
        return search_words(events, targets, query_terms(query), warm).best(25)

    literal = cpu_best(repeat, lambda: search(QUERY, warm))
    literal_new = cpu_best(repeat, lambda: search(QUERY, new_cache(spans)))
    literal_first = cpu_best(repeat, lambda: search(QUERY, new_cache(None)))
    return {
        "words, few hits": (cpu_best(repeat, lambda: search(FEW_HITS, warm)), literal),
        "words, many hits": (cpu_best(repeat, lambda: search(MANY_HITS, warm)), literal),
        "word lookup, few hits": (cpu_best(repeat, lambda: lookup(FEW_HITS)), literal),
        "word lookup, many hits": (cpu_best(repeat, lambda: lookup(MANY_HITS)), literal),
        "words, new process": (
            cpu_best(repeat, lambda: search(FEW_HITS, new_cache(spans))),
            literal_new,
        ),
        "words, first": (
            cpu_best(repeat, lambda: search(FEW_HITS, new_cache(None))),
            literal_first,
        ),
    }


BASELINES = {
    "open": "decode",
    "settings read": "open",
    "list_checkpoints": "scan",
    "history_search": "walk",
    "history_read": "walk",
    "step": "walk",
    "words, few hits": "literal",
    "words, many hits": "literal",
    "word lookup, few hits": "literal",
    "word lookup, many hits": "literal",
    "words, new process": "literal new",
    "words, first": "literal first",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    results: dict[int, dict[str, tuple[float, float]]] = {}
    for size in sizes:
        with tempfile.TemporaryDirectory() as root:
            results[size] = measure(Path(root), size, args.repeat)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"CPU ms, best of {args.repeat}; load average {load}")
    first, last = sizes[0], sizes[-1]
    for name, baseline in BASELINES.items():
        cells = []
        for size in sizes:
            figure, base = results[size][name]
            ratio = figure / base
            cells.append(
                f"{size:>7,d}: {figure * 1e3:8.2f} ({baseline} {base * 1e3:7.2f}, {ratio:6.3f}x)"
            )
        growth = results[last][name][0] / results[first][name][0]
        print(f"{name:23s}" + "   ".join(cells) + f"   {last // first}x log: {growth:5.2f}x")


if __name__ == "__main__":
    main()
