"""Transcript benchmark: a 100,000-event session with 50 compaction passes, in the TUI.

Builds the session through the real API (``Session.append`` on a ``JsonlStore``; turns of 1-3
steps with tool calls, assistant text, some reasoning; every ``events / 51`` events a basic
compaction bracket as in ``tests/helpers.py::compaction_bracket``: start -> summary ->
checkpoint replace -> end), then measures:

* open to first paint: in a fresh process (imports done before the clock starts), from
  constructing ``DshApp(resume=ID)`` and entering ``App.run_test()`` (headless) to the end of
  the transcript view's first ``render_lines`` with the session loaded. Includes
  ``Session.open`` (load + fold, writable), the projection and the layout of the screen.
  Best and median of ``--runs`` processes, with the breakdown of the best one, and how many
  blocks keep an estimated height once it is open (measured only as they come near the
  screen; ``benchmarks/tui_measure.py`` has what that saves). The app paints the log's
  newest page first (``dsh.tui.opening``) and opens the rest off the event loop; the same-run
  baseline is the one-step open (the whole log loaded and projected before the first paint,
  as a short log still opens), and "fully open" is when the composer takes turns
  (``DshApp.ready``);
* whole projection: ``project(events)`` over the stored log (best of 3), and the same under
  ``gc_paused()`` as the TUI runs it;
* live projection per event at 1k and at 100k: the same batch of events (one real turn with
  tool calls) fed repeatedly into a ``TranscriptProjector`` that has already seen the first
  1,000 events, and into one that has seen all 100,000. The batch reuses its ids, so the
  projectors' state does not grow while timing. The TUI's own per-event handling (projector
  + transcript view + status bar, ``DshApp.event_logged``) is measured the same way on apps
  that opened a 1k and a 100k session;
* memory: peak RSS increase (``VmHWM``) of opening the session in the TUI (fresh process),
  and the ``tracemalloc`` peak of ``project(events)``.

Targets (PASS/MISS): first paint <= 1 s (newest page first), whole projection <= 1 s,
per-event live cost independent of session length (100k / 1k <= 1.5).

Run: ``uv run python benchmarks/transcript.py [--events N] [--passes P] [--runs R] [--json]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import dsh.events as E
from _timing import best_of
from dsh.events.codec import gc_paused
from dsh.store import JsonlStore
from dsh.surface import Session, message_tokens, surface_message
from dsh.transcript import TranscriptProjector, project

TOOLS = ("read_file", "bash", "grep", "edit_file")
WORDS = "the a session log event fold replay def return self value path error ok = ( ) { } :"
MODEL = E.ModelSource(provider="bench", model="bench-model")
LIVE_REPEATS = 400


class Builder:
    def __init__(self, session: Session, rng: random.Random) -> None:
        self.s, self.rng, self.ids = session, rng, 0
        self.pool = " ".join(rng.choices(WORDS.split(" "), k=40_000))

    def text(self, low: int, high: int) -> str:
        size = self.rng.randint(low, high)
        at = self.rng.randrange(len(self.pool) - size)
        return self.pool[at : at + size]

    def new_id(self, prefix: str) -> str:
        self.ids += 1
        return f"{prefix}{self.ids:07d}"

    def message(self, role: Any, content: tuple[Any, ...], source: Any) -> E.Message:
        return E.Message(id=self.new_id(role[0]), role=role, content=content, source=source)

    def turn(self, turn: int) -> None:
        rng, add = self.rng, self.s.append
        add(E.TurnStart(turn=turn))
        steps = rng.randint(1, 3)
        for step in range(1, steps + 1):
            add(E.StepStart(turn=turn, step=step))
            if step == 1:
                add(self.message("user", (E.TextBlock(text=self.text(20, 400)),), E.UserSource()))
            calls = tuple(
                E.ToolCallBlock(
                    id=self.new_id("call_"),
                    name=rng.choice(TOOLS),
                    arguments=json.dumps({"path": f"src/mod{rng.randrange(100)}.py"}),
                )
                for _ in range(rng.randint(1, 3) if step < steps else 0)
            )
            thinking = (E.ReasoningBlock(text=self.text(40, 300)),) if rng.random() < 0.3 else ()
            body = (*thinking, E.TextBlock(text=self.text(40, 600)), *calls)
            usage = E.Usage(
                input_tokens=rng.randint(1000, 9000),
                output_tokens=rng.randint(9, 900),
                cache_read_tokens=rng.randint(0, 80_000),
            )
            reply = self.message("assistant", body, MODEL)
            add(E.AssistantMessage(turn=turn, step=step, message=reply, usage=usage))
            for c in calls:
                call = add(
                    E.ToolCall(
                        turn=turn, step=step, call_id=c.id, name=c.name, arguments=c.arguments
                    )
                )
                block = E.ToolResultBlock(
                    tool_call_id=c.id, content=(E.TextBlock(text=self.text(512, 4096)),)
                )
                result = self.message("tool", (block,), E.ToolSource(call_id=c.id))
                add(
                    E.ToolResult(turn=turn, step=step, message=result),
                    source_event_seqs=[call.seq],
                )
            add(E.StepEnd(turn=turn, step=step))
        add(E.TurnEnd(turn=turn, reason=E.TurnEndReason(kind="completed")))

    def compact(self) -> None:
        """``compaction_bracket`` over all but about the newest quarter of the surface."""
        s, nodes = self.s, self.s.nodes
        last = int(len(nodes) * 0.75)
        while last > 0 and not s.tool_pairing_balanced_after(nodes[last]):
            last -= 1
        shadowed = tuple(nodes[: last + 1])
        cid = self.new_id("cmp_")
        start = s.append(E.CompactionStart(compaction_id=cid, pass_id=cid, turn=None)).seq
        price = 0
        for seq in shadowed:
            message = surface_message(s.events[seq])  # type: ignore[arg-type]
            price += 0 if message is None else message_tokens(message)
        summary = E.CompactionSummary(
            compaction_id=cid,
            pass_id=cid,
            kind="state",
            summary=self.text(2000, 6000),
            shadowed_range=(shadowed[0], shadowed[-1]),
            shadowed_seqs=shadowed,
            shadowed_token_count=price,
            provider="bench",
            model="bench-model",
        )
        summary_seq = s.append(summary).seq
        source = E.PluginSource(plugin="compact", compaction_id=cid)
        s.append(
            self.message("user", (E.TextBlock(text=summary.summary),), source),
            surface_op=E.ReplaceOp(start=shadowed[0], end=shadowed[-1]),
            source_event_seqs=(start, summary_seq, *shadowed),
        )
        s.append(E.CompactionEnd(compaction_id=cid, pass_id=cid, turn=None))


def build(home: Path, events: int, passes: int, seed: int, cwd: Path) -> str:
    session = Session.create(JsonlStore(home), cwd=str(cwd))
    builder, turn = Builder(session, random.Random(seed)), 0
    every = events // (passes + 1)
    next_pass, done = every, 0
    while len(session.events) < events:
        turn += 1
        builder.turn(turn)
        if len(session.events) >= next_pass and done < passes:
            builder.compact()
            done += 1
            next_pass += every
    session.sync()
    session.close()
    return session.id


def peak_rss() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


# ---- the TUI, in a fresh process -------------------------------------------------------------


def tui_app(home: str, session_id: str, workspace: str, mode: str = "paged") -> Any:
    from dsh.agent.runtime import Route
    from dsh.config import Settings
    from dsh.llm.scripted import ScriptedProvider
    from dsh.tui import DshApp, TuiOptions

    provider = ScriptedProvider([{"text": "ok"}], model="bench")
    options = TuiOptions(
        settings=Settings(),
        store=JsonlStore(Path(home)),
        workspace=Path(workspace),
        resume=session_id,
        route_factory=lambda model: Route(provider, model or "bench", 128_000),
    )
    app = DshApp(options)
    if mode == "whole":  # the baseline: the one-step open a short log gets
        app.first_page_from = sys.maxsize
    return app


def live_batch(events: list[E.Event]) -> list[E.Event]:
    """The events of the last complete turn that has tool calls (one real turn)."""
    end = len(events) - 1
    while end >= 0:
        if isinstance(events[end], E.TurnEndEvent):
            start = end
            while not isinstance(events[start], E.TurnStartEvent):
                start -= 1
            batch = events[start : end + 1]
            if any(isinstance(e, E.ToolCallEvent) for e in batch):
                return batch
            end = start
        end -= 1
    raise SystemExit("no turn with tool calls in the session")


def measure_open(home: str, session_id: str, workspace: str, mode: str) -> None:
    """Subprocess mode: open the session in the TUI headless; print JSON figures."""
    import dsh.tui  # noqa: F401  (imports are not part of the clock)

    gc.collect()
    before = peak_rss()

    async def main() -> dict[str, float]:
        started = time.perf_counter()
        app = tui_app(home, session_id, workspace, mode)
        async with app.run_test(size=(120, 40)) as pilot:
            view = app.transcript if hasattr(app, "transcript") else None
            while view is None or view.first_paint is None:
                await pilot.pause(0)
                view = getattr(app, "transcript", None)
            first_paint = view.first_paint - started
            while not app.ready:  # not pause(0): a spinning loop would slow the opening thread
                await asyncio.sleep(0.005)
            fully_open = time.perf_counter() - started
            estimated = view.unmeasured
            blocks = len(view.model.blocks)
            per_event = await tui_per_event(app, live_batch(list(app.controller.session.events)))
            return {
                "first_paint_s": first_paint,
                "fully_open_s": fully_open,
                "session_open_s": app.controller.load_seconds,
                "projection_s": app.controller.project_seconds,
                "estimated_blocks": estimated,
                "blocks": blocks,
                "tui_per_event_us": per_event,
            }

    figures = asyncio.run(main())
    figures["rss_increase_bytes"] = peak_rss() - before
    print(json.dumps(figures))


async def tui_per_event(app: Any, batch: list[E.Event]) -> float:
    """Microseconds per event of ``DshApp.event_logged`` (projector + view + status bar),
    letting the app run after every batch so the work it defers is counted too."""
    projector = app.controller.projector
    elapsed, count = 0.0, 0
    for _ in range(LIVE_REPEATS // 4):
        start = time.perf_counter()
        for event in batch:
            app.event_logged(event, projector.feed(event))
            count += 1
        await asyncio.sleep(0)
        elapsed += time.perf_counter() - start
    return elapsed / count * 1e6


def run_open(home: Path, session_id: str, workspace: Path, mode: str) -> dict[str, float]:
    where = [str(home), session_id, str(workspace), mode]
    argv = [sys.executable, __file__, "--measure-open", *where]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


# ---- projection in this process --------------------------------------------------------------


def per_event(projector: TranscriptProjector, batch: list[E.Event]) -> float:
    """Microseconds per event fed, best of 5 rounds of LIVE_REPEATS batches."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(LIVE_REPEATS):
            for event in batch:
                projector.feed(event)
        best = min(best, (time.perf_counter() - start) / (LIVE_REPEATS * len(batch)))
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--passes", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3, help="TUI opens (fresh processes)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--measure-open", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_open:
        return measure_open(*args.measure_open)
    with tempfile.TemporaryDirectory(prefix="dsh-transcript-bench-") as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "ws"
        workspace.mkdir()
        started = time.perf_counter()
        session_id = build(home, args.events, args.passes, args.seed, workspace)
        build_s = time.perf_counter() - started
        small_id = build(home, 1_000, 1, args.seed, workspace)
        opens, whole_opens = [], []
        for _ in range(args.runs):  # interleaved, so both see the same machine load
            opens.append(run_open(home, session_id, workspace, "paged"))
            whole_opens.append(run_open(home, session_id, workspace, "whole"))
        small_open = run_open(home, small_id, workspace, "paged")
        session = Session.open(JsonlStore(home), session_id)
        events = list(session.events)
        landed = sum(E.is_checkpoint_event(e) for e in events)
        project_s = best_of(3, lambda: project(events), collect=True)

        def paused() -> None:
            with gc_paused():
                project(events)

        project_paused_s = best_of(3, paused, collect=True)
        tracemalloc.start()
        project(events)
        _, project_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        batch = live_batch(events)
        at_1k, at_100k = TranscriptProjector(), TranscriptProjector()
        for event in events[:1000]:
            at_1k.feed(event)
        with gc_paused():
            for event in events:
                at_100k.feed(event)
        live_1k, live_100k = per_event(at_1k, batch), per_event(at_100k, batch)

    best = min(opens, key=lambda o: o["first_paint_s"])
    paint = [o["first_paint_s"] for o in opens]
    whole = min(whole_opens, key=lambda o: o["first_paint_s"])
    paint_ratio = best["first_paint_s"] / whole["first_paint_s"]
    live_ratio = live_100k / live_1k
    tui_ratio = best["tui_per_event_us"] / small_open["tui_per_event_us"]
    mib = 1024 * 1024

    def mark(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    print(
        f"session: {len(events):,} events, {landed} compaction passes, "
        f"{best['blocks']:,} transcript blocks (built in {build_s:.1f} s, seed {args.seed})"
    )
    rows = [
        (
            f"open to first paint (best of {len(opens)})",
            f"{best['first_paint_s']:.3f} s",
            "<= 1.0 s",
            best["first_paint_s"] <= 1.0,
        ),
        ("  median", f"{statistics.median(paint):.3f} s", "", None),
        ("  baseline: one-step open (same run)", f"{whole['first_paint_s']:.3f} s", "", None),
        ("  first page / one-step", f"{paint_ratio:.2f} x", "", None),
        ("  fully open (composer takes turns)", f"{best['fully_open_s']:.3f} s", "", None),
        ("  baseline fully open", f"{whole['fully_open_s']:.3f} s", "", None),
        ("  of which Session.open (load + fold)", f"{best['session_open_s']:.3f} s", "", None),
        ("  of which projection (gc paused)", f"{best['projection_s']:.3f} s", "", None),
        ("  blocks with an estimated height", f"{best['estimated_blocks']:,}", "", None),
        ("whole projection project(events)", f"{project_s:.3f} s", "<= 1.0 s", project_s <= 1.0),
        ("  same under gc_paused()", f"{project_paused_s:.3f} s", "", None),
        ("live projection per event @1k", f"{live_1k:.2f} us", "", None),
        ("live projection per event @100k", f"{live_100k:.2f} us", "", None),
        ("  100k / 1k", f"{live_ratio:.2f} x", "<= 1.5 x", live_ratio <= 1.5),
        (
            "TUI per event @1k (project+view+status)",
            f"{small_open['tui_per_event_us']:.1f} us",
            "",
            None,
        ),
        ("TUI per event @100k", f"{best['tui_per_event_us']:.1f} us", "", None),
        ("  100k / 1k", f"{tui_ratio:.2f} x", "<= 1.5 x", tui_ratio <= 1.5),
        (
            "TUI open peak RSS increase (VmHWM)",
            f"{best['rss_increase_bytes'] / mib:.1f} MiB",
            "",
            None,
        ),
        ("project(events) tracemalloc peak", f"{project_peak / mib:.1f} MiB", "", None),
    ]
    for name, value, target, ok in rows:
        verdict = f"target {target:<9} {mark(ok)}" if ok is not None else ""
        print(f"{name:<42} {value:>12}   {verdict}".rstrip())
    if args.json:
        print(
            json.dumps(
                {
                    "events": len(events),
                    "passes": landed,
                    "opens": opens,
                    "whole_opens": whole_opens,
                    "small_open": small_open,
                    "project_s": project_s,
                    "project_gc_paused_s": project_paused_s,
                    "live_per_event_us_1k": live_1k,
                    "live_per_event_us_100k": live_100k,
                    "project_tracemalloc_peak_bytes": project_peak,
                }
            )
        )


if __name__ == "__main__":
    main()
