"""How often the note a prompt gets (``recall.attach_matches``) holds the compacted fact it asks
about, how often an ordinary prompt gets one, and what the model's own search would give.

Runs each built-in bench scenario (``dsh.bench``, offline, the recallable arm, each ``--seed``)
through the real loop and keeps its log. Then, over the facts no longer verbatim in the final
request (those the bench scores recall on):

* ``note``: the note ``dsh.agent.recall_matches.matches_text`` would give a prompt that is the
  fact's paraphrase (the words a person would use, sharing no 8 characters with it) or its
  online question, at the end of the session: does it hold the fact's anchor?
* ``search`` (the baseline): ``history_search`` run with that same prompt as its query, as a
  model that searches would, then ``history_read`` of its first 3 hits: does one hold it?
  (``dsh.bench.recall_scores.recall_rank``, depth 3, the note's width.)

And over the scenario's own prompts, each against the log as it was when it was sent (from the
first checkpoint on): how many would get a note, and its mean size in characters (the
``noise``: those prompts ask about nothing compacted).

Run: ``uv run python benchmarks/recall_matches.py [--seed 7 --seed 11] [--scenario NAME ...]``
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import dsh.bench.runner as bench_runner
from dsh.agent.recall_matches import matches_text
from dsh.bench.options import RunOptions
from dsh.bench.recall_scores import recall_rank
from dsh.bench.scenario import builtin_names
from dsh.bench.scorers import raw_anchors
from dsh.events import CompactionSummaryEvent, Event, UserMessageEvent, UserSource
from dsh.recall import SpanCache, search_history

WIDTH = 3
"""Hits the baseline reads: as many as a note shows."""


def _captured_run(name: str, seed: int) -> tuple[Any, list[Event], Any]:
    """The scenario, its log and its final request after a recallable run."""
    scenario = bench_runner.load_scenario(name, seed)
    kept: dict[str, Any] = {}
    score = bench_runner.score_run

    def capture(scenario: Any, arm: str, log: Any, **options: Any) -> Any:
        kept["events"] = list(log.session.events)
        kept["final"] = log.requests[-1] if log.requests else None
        return score(scenario, arm, log, **options)

    bench_runner.score_run = capture  # type: ignore[assignment]
    try:
        bench_runner.run_scenario(scenario, "recallable", options=RunOptions(latency_ms=0))
    finally:
        bench_runner.score_run = score  # type: ignore[assignment]
    return scenario, kept["events"], kept["final"]


def measure(name: str, seed: int, window: int) -> dict[str, int]:
    scenario, events, final = _captured_run(name, seed)
    raw = raw_anchors(final, [fact.anchor for fact in scenario.facts])
    counts = dict(asked=0, note=0, search=0, snippets=0, prompts=0, noted=0, chars=0)
    cache = SpanCache()
    for fact in scenario.facts:
        if fact.anchor in raw:
            continue
        for prompt in [*fact.paraphrases, *([fact.question] if fact.question else [])]:
            counts["asked"] += 1
            text = matches_text(events, prompt, cache=cache, window=window) or ""
            counts["note"] += fact.anchor in text
            rank = recall_rank(events, fact.anchor, prompt, depth=WIDTH, cache=cache)
            counts["search"] += rank is not None
            shown = search_history(events, prompt, limit=WIDTH, cache=cache).text
            counts["snippets"] += fact.anchor in shown
    first = next((e.seq for e in events if isinstance(e, CompactionSummaryEvent)), None)
    if first is not None:
        for event in events[first:]:
            if isinstance(event, UserMessageEvent) and isinstance(event.data.source, UserSource):
                prompt = "".join(getattr(b, "text", "") for b in event.data.content)
                before: Sequence[Event] = events[: event.seq]
                text = matches_text(before, prompt, cache=SpanCache(), window=window)
                counts["prompts"] += 1
                counts["noted"] += text is not None
                counts["chars"] += len(text or "")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, action="append")
    parser.add_argument("--scenario", action="append")
    parser.add_argument("--window", type=int, default=12_000, help="for the note's size bound")
    args = parser.parse_args()
    seeds = args.seed or [7, 11]
    names = args.scenario or builtin_names()
    total = dict(asked=0, note=0, search=0, snippets=0, prompts=0, noted=0, chars=0)
    print(
        f"{'scenario':<22} {'seed':>4} {'asked':>5} {'note':>5} {'search@3':>8} "
        f"{'prompts':>7} {'noted':>5} {'chars/note':>10}"
    )
    for name in names:
        for seed in seeds:
            c = measure(name, seed, args.window)
            for key in total:
                total[key] += c[key]
            per = c["chars"] / c["noted"] if c["noted"] else 0
            print(
                f"{name:<22} {seed:>4} {c['asked']:>5} {c['note']:>5} {c['search']:>8} "
                f"{c['prompts']:>7} {c['noted']:>5} {per:>10.0f}"
            )
    t = total
    print()
    print(f"fact questions whose note holds the fact:        {share(t['note'], t['asked'])}")
    print(
        f"baseline: history_search(question), first {WIDTH} hits: {share(t['search'], t['asked'])}"
    )
    print(f"  the fact in those hits' snippets themselves:   {share(t['snippets'], t['asked'])}")
    if t["snippets"]:
        print(f"note ÷ snippets:                                 {t['note'] / t['snippets']:.2f}×")
    print(f"the scenarios' own prompts given a note (noise):  {share(t['noted'], t['prompts'])}")
    if t["noted"]:
        print(
            f"mean note size:                                  {t['chars'] / t['noted']:.0f} chars"
        )


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} = {part / whole:.0%}" if whole else "0/0"


if __name__ == "__main__":
    main()
