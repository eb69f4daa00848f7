"""TUI measuring benchmark: what measuring transcript blocks (their rows, for their height)
costs, per block and after a long session opens. CPU time throughout: the machine this runs on
is shared, and the cost is CPU the open and the event loop compete for.

* Per block: the rows of one Markdown reply (``markdown_rows``) and of one message block of a
  session's mix (``block_rows``, what the layout measures), now (the Markdown parser, lexers
  and code theme made once, ``dsh.tui.markdown``) against the baseline, a new Rich
  ``Markdown`` per document as the TUI rendered before. The same texts, warmed up once, then
  ``--rounds`` interleaved rounds; the median.
* After open: sessions of ``--sizes`` events (``_web_session.build_session``: Markdown replies
  with a code block, tool calls, compactions) opened in the TUI headless, each in a fresh
  process, ``--rounds`` times interleaved; the median. Now: blocks far from the screen keep
  their estimated height until they come near it. Baseline: the previous strategy, restored in
  the process (``restore_previous_measuring``): every block measured by a background worker
  once the session is open, 400 a slice, each Markdown reply with a new Rich ``Markdown``.
  Reported: time and CPU to ``DshApp.ready`` (composer takes turns), blocks still estimated
  then, the CPU the process uses after ready until no background measuring runs plus one
  second, and the CPU of a jump to the top (home), which measures what it brings on screen.

Run: ``uv run python benchmarks/tui_measure.py [--rounds 3] [--sizes 10000,100000]
[--keep DIR]`` (``--keep`` builds the sessions there once and reuses them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.transcript import project
from dsh.tui import blocks
from dsh.tui.blocks import Block, TranscriptModel, block_rows
from dsh.tui.markdown import CODE_THEME, document_rows, looks_like_markdown, markdown_rows

sys.path.insert(0, str(Path(__file__).parent))
from _web_session import build_session

WIDTH = 118
"""The transcript's content width in a 120-column terminal."""
MARKDOWN_TEXTS = 400
MIX_BLOCKS = 600
BASELINE_SLICE = 400
"""Blocks the previous background worker measured between two yields to the event loop."""
TAIL_S = 1.0


def fresh_markdown_rows(text: str, width: int) -> list[Any]:
    """The baseline: ``markdown_rows`` as it was, a new Rich ``Markdown`` per document."""
    from rich.markdown import Markdown

    return document_rows(Markdown(text, code_theme=CODE_THEME, hyperlinks=False), width)


# ---- per block -------------------------------------------------------------------------------


def message_blocks(home: Path, session_id: str) -> list[Block]:
    """The blocks the layout estimates (prompts and replies) of the stored session."""
    with Session.open(JsonlStore(home), session_id) as session:
        model = TranscriptModel()
        model.add(project(session.events)[0])
    return [b for b in model.blocks if b.kind in ("user", "assistant")]


def evenly(items: list[Any], count: int) -> list[Any]:
    step = max(1, len(items) // count)
    return items[::step][:count]


def cpu_ms_each(work: Callable[[Any], Any], items: list[Any]) -> float:
    start = time.process_time()
    for item in items:
        work(item)
    return (time.process_time() - start) / len(items) * 1e3


def per_block(home: Path, session_id: str, rounds: int) -> dict[str, dict[str, float]]:
    """Median CPU ms per block, baseline and now, of Markdown replies and of the mix."""
    messages = message_blocks(home, session_id)
    mix = evenly(messages, MIX_BLOCKS)
    replies = [b.text for b in messages if b.kind == "assistant"]
    texts = evenly([t for t in replies if looks_like_markdown(t)], MARKDOWN_TEXTS)

    def rows_of_block(block: Block) -> Any:
        return block_rows(block, WIDTH, show_reasoning=False, details={})

    kinds: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any], list[Any]]] = {
        f"Markdown reply ({len(texts)})": (
            lambda t: fresh_markdown_rows(t, WIDTH - 2),
            lambda t: markdown_rows(t, WIDTH - 2),
            texts,
        ),
        f"message block, session mix ({len(mix)})": (rows_of_block, rows_of_block, mix),
    }
    out: dict[str, dict[str, float]] = {}
    for name, (baseline, now, items) in kinds.items():
        figures: dict[str, list[float]] = {"baseline": [], "now": []}
        for round_ in range(rounds + 1):  # the first round warms up (text read, caches)
            for mode, work in (("baseline", baseline), ("now", now)):
                blocks.markdown_rows = fresh_markdown_rows if mode == "baseline" else markdown_rows
                took = cpu_ms_each(work, items)
                if round_:
                    figures[mode].append(took)
        blocks.markdown_rows = markdown_rows
        out[name] = {mode: statistics.median(values) for mode, values in figures.items()}
    return out


# ---- after open, in a fresh process ----------------------------------------------------------


def restore_previous_measuring() -> None:
    """The baseline in this process: a new Rich ``Markdown`` per reply, and once a long
    transcript is laid out, every estimated block measured by a background worker."""
    from dsh.tui.transcript_layout import TranscriptLayout

    blocks.markdown_rows = fresh_markdown_rows
    relayout = TranscriptLayout._relayout

    async def measure_rest(view: Any) -> None:
        while view.unmeasured:
            view._measure_some(BASELINE_SLICE)
            view.refresh()
            await asyncio.sleep(0)

    def relayout_then_measure_all(self: Any, *, keep_position: bool) -> None:
        relayout(self, keep_position=keep_position)
        if self.unmeasured and self.is_attached:
            self.run_worker(measure_rest(self), group="measure", exclusive=True)

    TranscriptLayout._relayout = relayout_then_measure_all  # type: ignore[method-assign]


def open_in_tui(home: str, session_id: str, workspace: str, mode: str) -> None:
    """Subprocess mode: open the session headless, print the figures as JSON."""
    from transcript import tui_app

    if mode == "baseline":
        restore_previous_measuring()

    async def main() -> dict[str, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        app = tui_app(home, session_id, workspace)
        async with app.run_test(size=(WIDTH + 2, 40)) as pilot:
            while not app.ready:  # not pause(0): a spinning loop would slow the opening thread
                await asyncio.sleep(0.005)
            ready_s, ready_cpu = time.perf_counter() - wall, time.process_time() - cpu
            view = app.transcript
            estimated = view.unmeasured
            cpu = time.process_time()
            while any(w.group == "measure" and w.is_running for w in app.workers):
                await asyncio.sleep(0.01)
            await asyncio.sleep(TAIL_S)
            after_cpu = time.process_time() - cpu
            cpu = time.process_time()
            view.scroll_by_key("home")
            await pilot.pause()
            home_cpu = time.process_time() - cpu
            assert view.screen_anchor() == (0, 0)
            return {
                "blocks": len(view.model.blocks),
                "ready_s": ready_s,
                "ready_cpu_s": ready_cpu,
                "estimated_at_ready": estimated,
                "after_ready_cpu_s": after_cpu,
                "home_cpu_s": home_cpu,
            }

    print(json.dumps(asyncio.run(main())))


def run_open(home: Path, session_id: str, workspace: Path, mode: str) -> dict[str, float]:
    argv = [sys.executable, __file__, "--open", str(home), session_id, str(workspace), mode]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


# ---- the run ---------------------------------------------------------------------------------


def session_at(root: Path, events: int) -> tuple[Path, str, Path]:
    """(home, session id, workspace) of a built session of ``events`` events, built once."""
    home, workspace = root / f"home{events}", root / f"ws{events}"
    sessions = home / "sessions"
    if not sessions.is_dir():
        workspace.mkdir(parents=True, exist_ok=True)
        build_session(JsonlStore(home), workspace, events, seed=1)
    session_id = next(p.name for p in sessions.iterdir())
    return home, session_id, workspace


def ratio(now: float, baseline: float) -> str:
    return f"{now / baseline:.2f}x" if baseline else "-"


def report(rounds: int, sizes: list[int], root: Path) -> None:
    built = {n: session_at(root, n) for n in sizes}
    print(f"per block, CPU ms (median of {rounds} rounds){'baseline':>18}{'now':>10}{'ratio':>9}")
    for name, figures in per_block(*built[min(sizes)][:2], rounds).items():
        base, now = figures["baseline"], figures["now"]
        print(f"  {name:<48}{base:>10.3f}{now:>10.3f}{ratio(now, base):>9}")
    rows = (
        ("ready (wall)", "ready_s", "s"),
        ("CPU to ready", "ready_cpu_s", "s"),
        ("blocks estimated at ready", "estimated_at_ready", ""),
        (f"CPU after ready (measuring done + {TAIL_S:g} s)", "after_ready_cpu_s", "s"),
        ("CPU of a jump to the top (home)", "home_cpu_s", "s"),
    )
    for n in sizes:
        home, session_id, workspace = built[n]
        opens: dict[str, list[dict[str, float]]] = {"baseline": [], "now": []}
        for _ in range(rounds):  # interleaved, so both see the same machine load
            for mode in opens:
                opens[mode].append(run_open(home, session_id, workspace, mode))
        blocks_ = int(opens["now"][0]["blocks"])
        print(f"open {n:,} events ({blocks_:,} blocks), median of {rounds} fresh processes")
        for label, key, unit in rows:
            base = statistics.median(o[key] for o in opens["baseline"])
            now = statistics.median(o[key] for o in opens["now"])
            shown = f"{base:>10.3f}{now:>10.3f}" if unit else f"{base:>10,.0f}{now:>10,.0f}"
            print(f"  {label:<48}{shown}{ratio(now, base):>9}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--keep", type=Path, help="build the sessions here once, reuse them")
    parser.add_argument("--open", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.open:
        return open_in_tui(*args.open)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        return report(args.rounds, sizes, args.keep)
    with tempfile.TemporaryDirectory(prefix="dsh-tui-measure-") as tmp:
        report(args.rounds, sizes, Path(tmp))


if __name__ == "__main__":
    main()
