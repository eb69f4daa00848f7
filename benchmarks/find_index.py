"""The TUI's find (ctrl+f): what the first key typed costs the event loop, at the transcript
sizes of a 10k- and a 100k-event session (3,750 and 37,500 blocks).

Find folds each block's searchable text (a tool card's arguments and sanitised result,
case-folded) into ``dsh.tui.find.SearchIndex`` once, and again only for a block that changed.
The blocks are made here as a session of that length shows them: per turn a prompt, a reply
(some with reasoning) and 1-3 tool cards whose results hold 0.3-3 KB of lines. Timed with
``_timing.best_of`` (wall time, the best of ``--repeat``):

* ``first key, before`` (the same-run baseline): a new index's ``matching``, which folds
  every block, as the first key ran on the event loop before;
* ``first key, now``: what the key still runs on the event loop: ``stale`` (which blocks need
  folding), the folding itself going to a thread while the bar says ``searching…``;
* ``thread``: that folding (``refresh`` of the stale blocks), off the event loop;
* ``later key``: ``matching`` on the folded index (what every key after runs);

and the size of the folded text the index keeps (``memory``), beside the blocks' own text.

Run: ``uv run python benchmarks/find_index.py [--sizes 3750,37500] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _timing import best_of
from dsh.transcript import ToolResultItem
from dsh.tui.blocks import Block
from dsh.tui.find import SearchIndex

WORDS = [
    "the",
    "parser",
    "retries",
    "each",
    "token",
    "once",
    "then",
    "reads",
    "the",
    "next",
    "line",
    "of",
    "input",
    "quickly",
]


def text(rng: random.Random, size: int) -> str:
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        lines.append(line.capitalize() if rng.random() < 0.5 else f"\t{line}")
        total += len(line) + 1
    return "\n".join(lines)


def transcript(blocks: int, seed: int = 7) -> list[Block]:
    rng, out, seq = random.Random(seed), [], 0
    while len(out) < blocks:
        seq += 1
        out.append(Block("user", seq, cached_text=text(rng, 80), cached_reasoning=""))
        for _ in range(rng.randint(1, 3)):
            seq += 1
            args = json.dumps({"path": f"src/module_{seq}.py", "offset": seq % 100})
            card = Block("tool", seq, label="read_file", arguments=args, call_id=f"c{seq}")
            body = text(rng, rng.randint(300, 3000))
            card.result = ToolResultItem(seq=seq, call_id=f"c{seq}", text=body, is_error=False)
            out.append(card)
        seq += 1
        reasoning = text(rng, 200) if rng.random() < 0.3 else ""
        out.append(Block("assistant", seq, cached_text=text(rng, 400), cached_reasoning=reasoning))
    return out[:blocks]


def measure(blocks: list[Block], repeat: int) -> dict[str, float]:
    needle, opts = "r", {"show_reasoning": False, "details": {}}

    def before() -> None:
        SearchIndex().matching(blocks, needle, **opts)

    def now() -> None:
        SearchIndex().stale(blocks, **opts)

    def thread() -> None:
        index = SearchIndex()
        index.refresh(blocks, index.stale(blocks, **opts), **opts)

    built = SearchIndex()
    built.matching(blocks, needle, **opts)
    return {
        "first key, before": best_of(repeat, before, collect=True),
        "first key, now": best_of(repeat, now, collect=True),
        "thread": best_of(repeat, thread, collect=True),
        "later key": best_of(repeat, lambda: built.matching(blocks, "re", **opts)),
        "memory MB": sum(len(entry[5]) for entry in built._texts) / 1e6,
        "text MB": sum(len(b.text) + (len(b.result.text) if b.result else 0) for b in blocks) / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3750,37500")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        m = measure(transcript(size), args.repeat)
        ratio = m["first key, before"] / m["first key, now"]
        print(
            f"{size:>6} blocks: first key {m['first key, before'] * 1000:7.1f} ms before,"
            f" {m['first key, now'] * 1000:6.1f} ms now ({ratio:.0f}x less on the event loop);"
            f" folded in the thread {m['thread'] * 1000:7.1f} ms;"
            f" later key {m['later key'] * 1000:5.1f} ms;"
            f" index {m['memory MB']:.1f} MB of folded text for {m['text MB']:.1f} MB of text"
        )


if __name__ == "__main__":
    main()
