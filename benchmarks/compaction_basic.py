"""Basic compaction over a long session: passes, tokens, simulated cache hits, engine time.

Drives a seeded ``--turns``-turn scripted session (default 300; turns of 1-3 steps, small
``read_file``/``list_dir``/``glob``/``grep`` calls on a temporary workspace, assistant text of a
few sentences, planted facts such as ``ZEBRA-7731`` and ``port = 8123``) through the real
``Agent`` with a small ``--window`` (default 8,000 tokens) and automatic compaction: the
``basic`` backend (threshold 0.8, retain window/6, summary budget window/10) with the keyless
``extractive`` summariser, wired with ``compaction_hooks`` exactly as the CLI does. The model
is the ``ScriptedProvider``; the store is in memory.

Measured:

* every landed pass: its turn, the context size before -> after (``PassResult``, the engine's
  own metric);
* simulated cache-hit ratio: a ``DeepSeekCache`` fed every request the provider receives, in
  send order (``request_segments``; ``save_output`` with the reply), as sum(hit) / sum(input)
  over the session, and for the first conversation request after each pass (its hit ratio and
  uncached tokens);
* the engine's own time per pass, without the model call: ``backend.plan`` +
  ``CompactionEngine.run_pass`` minus the time inside the summariser's ``summarize`` (with the
  extractive summariser that is the code writing the summary);
* safety: passes that did not shrink the context, several passes in one pre-step, passes in
  back-to-back steps, "still above threshold" warnings.

Run: ``uv run python benchmarks/compaction_basic.py [--turns N] [--window W] [--seed S]
[--json]``. A number that looks bad is reported, never an error exit.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from _compaction_common import (
    SessionRun,
    basic_settings,
    describe_settings,
    hit_ratio,
    mean,
    median,
    run_session,
    safety,
)


def figures(run: SessionRun) -> dict[str, Any]:
    conversation = run.conversation()
    firsts = [p.first_request for p in run.passes if p.first_request is not None]
    engine_ms = [p.engine_s * 1000 for p in run.passes]
    return {
        "turns": run.turns,
        "window": run.window,
        "model_calls": len(conversation),
        "events": len(run.session.events),
        "passes": len(run.passes),
        "wall_s": run.wall_s,
        "cache_hit_ratio": hit_ratio(run.calls),
        "input_tokens": sum(c.input_tokens for c in run.calls),
        "cached_tokens": sum(c.hit for c in run.calls),
        "first_request_hit_ratio": hit_ratio(firsts),
        "first_request_uncached_mean": mean([c.uncached for c in firsts]),
        "tokens_before_mean": mean([p.tokens_before for p in run.passes]),
        "tokens_after_mean": mean([p.tokens_after for p in run.passes]),
        "engine_ms_mean": mean(engine_ms),
        "engine_ms_median": median(engine_ms),
        "engine_ms_max": max(engine_ms, default=0.0),
        "plan_ms_mean": mean([p.plan_s * 1000 for p in run.passes]),
        "summariser_ms_mean": mean([p.summarize_s * 1000 for p in run.passes]),
        "hook_overhead_ms_per_step": (run.probe.hook_s - run.probe.hook_summarize_s)
        * 1000
        / max(1, len(conversation)),
        **{f"safety_{k}": v for k, v in safety(run).items()},
        "per_pass": [
            {
                "pass": p.number,
                "turn": p.turn,
                "step": p.step,
                "before": p.tokens_before,
                "after": p.tokens_after,
                "first_hit": p.first_request.hit if p.first_request else None,
                "first_input": p.first_request.input_tokens if p.first_request else None,
                "engine_ms": round(p.engine_s * 1000, 3),
                "summariser_ms": round(p.summarize_s * 1000, 3),
            }
            for p in run.passes
        ],
    }


def report(run: SessionRun, f: dict[str, Any], seed: int) -> None:
    print(
        f"session: {f['turns']} turns, {f['model_calls']} model calls, {f['events']:,} events; "
        f"seed {seed}; {f['wall_s']:.1f} s"
    )
    config = describe_settings(run.settings, run.window)
    print(f"compaction: basic + extractive summariser; {config}")
    print()
    print(
        f"{'pass':>4} {'turn':>5} {'step':>5}   {'tokens before → after':>21}   "
        f"{'first request: hit':>18} {'uncached':>8}   {'engine ms':>9} {'(summ. ms)':>10}"
    )
    for p in run.passes:
        first = p.first_request
        hit = f"{first.hit / first.input_tokens:.0%}" if first else "-"
        uncached = f"{first.uncached:,}" if first else "-"
        print(
            f"{p.number:>4} {p.turn or '-':>5} {p.step:>5}   "
            f"{p.tokens_before:>9,} → {p.tokens_after:>9,}   {hit:>18} {uncached:>8}   "
            f"{p.engine_s * 1000:>9.2f} {p.summarize_s * 1000:>10.2f}"
        )
    print()
    s = {k[7:]: v for k, v in f.items() if k.startswith("safety_")}
    rows = [
        ("passes", f"{f['passes']}"),
        (
            "context per pass (mean)",
            f"{f['tokens_before_mean']:,.0f} → {f['tokens_after_mean']:,.0f} tokens",
        ),
        (
            "simulated cache-hit ratio (session)",
            f"{f['cache_hit_ratio']:.1%}  ({f['cached_tokens']:,} of {f['input_tokens']:,} "
            "input tokens)",
        ),
        (
            "first request after a pass",
            f"hit {f['first_request_hit_ratio']:.1%}, "
            f"{f['first_request_uncached_mean']:,.0f} uncached tokens (mean)",
        ),
        (
            "engine time per pass (excl. summariser)",
            f"mean {f['engine_ms_mean']:.2f} ms, median {f['engine_ms_median']:.2f} ms, "
            f"max {f['engine_ms_max']:.2f} ms (of which planning {f['plan_ms_mean']:.2f} ms)",
        ),
        ("extractive summariser per pass", f"mean {f['summariser_ms_mean']:.2f} ms"),
        (
            "pre-step hook per step (excl. summariser)",
            f"{f['hook_overhead_ms_per_step']:.3f} ms",
        ),
        (
            "safety",
            f"{s['grew']} pass(es) grew the context; max {s['max_per_pre_step']} pass(es) in one "
            f"pre-step; {s['back_to_back']} pass(es) in back-to-back steps; {s['warnings']} "
            f"warning(s); {s['refused']} refused attempt(s)",
        ),
    ]
    for name, value in rows:
        print(f"{name:<42} {value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--window", type=int, default=8000, help="context window (tokens)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    if args.turns < 10:
        parser.error("--turns must be at least 10")
    if args.window < 3000:
        parser.error("--window must be at least 3000 (the tools and system prompt take ~1,200)")
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as tmp:
        run = run_session(
            Path(tmp),
            basic_settings(args.window),
            window=args.window,
            turns=args.turns,
            seed=args.seed,
        )
    f = figures(run)
    report(run, f, args.seed)
    if args.json:
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in f.items()}))


if __name__ == "__main__":
    main()
