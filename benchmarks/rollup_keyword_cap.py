"""A rollup's keyword cap scaled to the stub region's share, against the fixed 600 characters.

Drives the long scripted session of ``compaction_basic.py`` through the real ``Agent`` with the
recallable backend and the keyless ``extractive`` summariser, in a small window (default 4,096
and 8,192 tokens; ``--settings default``: dsh's own budgets for the window, the default;
``scaled``: those of ``recallable.py``), twice per window: *fixed* — every
rollup's keyword line capped at ``ROLLUP_KEYWORD_CHARS`` (600), as before the change, by
patching ``rollup_keyword_chars`` — and *scaled* — the cap of the code under test (a quarter of
the stub region's share in characters, at most 600).

Printed per window and variant: passes, passes with a rollup, passes that wrote a new stub,
the deepest rollup chain (``history_read`` hops from the head rollup to the oldest stub), the
stub region's mean size after a pass, the mean rollup size, and for the first conversation
request after each pass its mean cached prefix (``DeepSeekCache``: tokens hit) and mean LCP
prefix kept (an OpenAI-like cache), the overall cache-hit ratio and planted-fact recall; then
scaled ÷ fixed for each.

Run: ``uv run python benchmarks/rollup_keyword_cap.py [--turns N] [--window W ...] [--seed S]``.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _compaction_common import (
    SessionRun,
    check_recall,
    hit_ratio,
    mean,
    recallable_settings,
    run_session,
)
from dsh.compaction.recallable import backend, stub_region
from dsh.compaction.recallable.rollup import (
    ROLLUP_KEYWORD_CHARS,
    rollup_keyword_chars,
    rollup_tokens,
)
from dsh.config import CompactionSettings
from dsh.events import CompactionSummaryEvent

VARIANTS = ("fixed", "scaled")
FOOTER_ID = re.compile(r"^\[checkpoint c(\d+):", re.M)


budgets: list[int] = []
_stub_budget = backend.RecallableBackend.stub_budget


def _recorded_budget(self: backend.RecallableBackend, *args: Any) -> int:
    budgets.append(_stub_budget(self, *args))
    return budgets[-1]


backend.RecallableBackend.stub_budget = _recorded_budget  # type: ignore[method-assign]


@contextmanager
def cap(variant: str) -> Iterator[None]:
    """``fixed``: every new rollup's keyword line capped at 600 characters, as before."""
    saved: list[tuple[Any, Callable[[int | None], int]]] = []
    if variant == "fixed":
        for module in (backend, stub_region):
            saved.append((module, module.rollup_keyword_chars))
            module.rollup_keyword_chars = lambda budget: ROLLUP_KEYWORD_CHARS  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module, original in saved:
            module.rollup_keyword_chars = original  # type: ignore[attr-defined]


def rollups(run: SessionRun) -> list[CompactionSummaryEvent]:
    return [
        e
        for e in run.session.events
        if isinstance(e, CompactionSummaryEvent) and e.data.model == "rollup"
    ]


def chain_depth(run: SessionRun) -> int:
    """The deepest rollup chain: rollups nested in rollups, the head one counted."""
    depth: dict[int, int] = {}  # by checkpoint id (its summary's seq), as footers name it
    for event in rollups(run):
        inner = [depth[int(n)] for n in FOOTER_ID.findall(event.data.summary) if int(n) in depth]
        depth[event.seq] = 1 + max(inner, default=0)
    return max(depth.values(), default=0)


def figures(run: SessionRun) -> dict[str, float]:
    passes = run.passes
    firsts = [p.first_request for p in passes if p.first_request is not None]
    pass_ids = {e.data.pass_id for e in rollups(run)}
    recall = check_recall(run) or []
    made = rollups(run)
    return {
        "passes": len(passes),
        "rollup passes": len(pass_ids),
        "passes with a new stub": sum(p.stubs > 0 for p in passes),
        "stubs": sum(p.stubs for p in passes),
        "deepest rollup chain": chain_depth(run),
        "stub region mean (tokens)": mean([p.stub_region_tokens for p in passes]),
        "rollup mean (tokens)": mean([rollup_tokens(e.data.summary) for e in made]),
        "first request cached (tokens)": mean([c.hit for c in firsts]),
        "first request LCP kept (tokens)": mean([c.prefix_kept for c in firsts]),
        "first request input (tokens)": mean([c.input_tokens for c in firsts]),
        "cache-hit ratio": hit_ratio(run.calls),
        "recall found": sum(r.rank is not None for r in recall),
        "recall planted": len(recall),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--window", type=int, action="append", help="default 4096 and 8192")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--settings",
        choices=("default", "scaled"),
        default="default",
        help="default: dsh's own budgets for the window (CompactionSettings.for_window); "
        "scaled: recallable.py's (chunk window/8, stub chunk/8, state window/10)",
    )
    args = parser.parse_args()
    windows = args.window or [4096, 8192]
    for window in windows:
        settings = (
            CompactionSettings(backend="recallable").for_window(window)
            if args.settings == "default"
            else recallable_settings(window)
        )
        budgets.clear()
        results: dict[str, dict[str, float]] = {}
        with tempfile.TemporaryDirectory(prefix="dsh-rollupcap-") as tmp:
            for variant in VARIANTS:
                with cap(variant):
                    run = run_session(
                        Path(tmp) / variant,
                        settings,
                        window=window,
                        turns=args.turns,
                        seed=args.seed,
                    )
                results[variant] = figures(run)
        print(f"\nwindow {window:,}, {args.turns} turns, seed {args.seed}, {args.settings} budgets")
        print(
            f"  chunk {settings.chunk:,}, stub {settings.stub}, state {settings.state_max:,}, "
            f"share {settings.stub_region_ratio:g}, retain {settings.retain_for(window):,}"
        )
        print(
            f"  stub region budget {min(budgets):,}-{max(budgets):,} tokens; scaled keyword cap "
            f"{rollup_keyword_chars(min(budgets))}-{rollup_keyword_chars(max(budgets))} chars"
        )
        print(f"{'':34} {'fixed 600':>12} {'scaled':>12} {'ratio':>8}")
        for key in results["fixed"]:
            before, after = results["fixed"][key], results["scaled"][key]
            ratio = f"{after / before:.2f}x" if before else "-"
            print(f"{key:34} {before:12,.3f} {after:12,.3f} {ratio:>8}".replace(".000 ", "     "))


if __name__ == "__main__":
    main()
