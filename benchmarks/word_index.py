"""``history_search``'s word indexes at 1k, 10k and 100k events: what the first search by words
of a session pays to build them, against a later search, and what keeping them current as
checkpoints land would cost the appends instead.

A search that finds nothing literally looks up the query's words in each checkpoint span's word
index (``dsh.recall.word_index``), built on the first such search and stored beside the span
file (``<id>.words``), so a new process reads it. Each session is ``_web_session.
build_session``'s (turns of 1-3 steps, ``read_file`` results of 0.3-3 KB), with a ``/compact``
every ``--compact-every`` turns (25: a checkpoint every ~125 events). Timed in CPU
(``time.process_time``: the machine is shared), the best of ``--repeat``:

* ``first``: ``search_history`` of a query no message holds literally (``retrying parsers
  quasar``: its words are looked up) with a new span cache and no span or word files, as a
  session's first search by words runs (every span rendered, lower-cased and indexed, and the
  files written);
* ``new process``: the same query with a new span cache on those files (``dsh recall search``,
  a resumed agent);
* ``one span``: the newest checkpoint's span rendered, lower-cased and indexed alone, what an
  index kept current would add to the append of the ``compaction/end`` that lands it;

each beside the baseline ``later``: the same search again on the warm cache. Then the appends:

* ``append, indexing``: CPU per event of writing the whole session with an observer that
  indexes each checkpoint as its ``compaction/end`` is appended (an index kept current as the
  log grows), beside the baseline ``append``: the same session written without it.

Run: ``uv run python benchmarks/word_index.py [--sizes 1000,10000,100000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import _web_session
from dsh.events import CompactionEndEvent, Event
from dsh.recall import SpanCache, list_checkpoints, search_history
from dsh.store import JsonlStore
from dsh.surface import Session

QUERY = "retrying parsers quasar"
"""No message holds it literally (``quasar`` is in none); many hold ``retry`` and ``parser``."""


def cpu_best(repeat: int, work: Callable[[], object]) -> float:
    """The least CPU seconds of ``repeat`` calls of ``work``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def write_session(home: Path, size: int, seed: int, *, indexing: bool) -> tuple[str, float]:
    """A session of about ``size`` events written to a new store at ``home``; its id and the
    CPU seconds per event its writing took (with ``indexing``: each checkpoint indexed as it
    lands)."""

    def prologue(session: Session) -> None:
        if not indexing:
            return
        cache, done = SpanCache(), set()

        def landed(event: Event) -> None:
            if isinstance(event, CompactionEndEvent):
                for checkpoint in list_checkpoints(session.events, session):
                    if checkpoint.seq not in done:
                        cache.words(session.events, checkpoint)
                        done.add(checkpoint.seq)

        session.subscribe(landed)

    start = time.process_time()
    session_id, _, _ = _web_session.build_session(
        JsonlStore(home), home, size, seed, prologue=prologue
    )
    return session_id, (time.process_time() - start) / size


def measure(tmp: Path, size: int, seed: int, repeat: int) -> dict[str, tuple[float, float]]:
    plain_id, plain = write_session(tmp / "plain", size, seed, indexing=False)
    _, indexed = write_session(tmp / "indexing", size, seed, indexing=True)
    store = JsonlStore(tmp / "plain")
    with Session.open(store, plain_id) as session:
        events = session.events
        checkpoints = list_checkpoints(events, session)
        assert checkpoints, "no checkpoint: a larger size or a smaller --compact-every"

        def search(cache: SpanCache) -> None:
            output = search_history(events, QUERY, cache=cache, index=session)
            assert output.meta["matched"] == 0 and output.meta.get("byWords", 0) >= 1

        def new_cache(path: Path | None) -> SpanCache:
            cache = SpanCache()
            cache.use_file(path)
            return cache

        rounds = [tmp / f"spans-{n}" / f"{plain_id}.spans" for n in range(repeat)]
        first = min(cpu_once(lambda path=path: search(new_cache(path))) for path in rounds)
        new_process = cpu_best(repeat, lambda: search(new_cache(rounds[0])))
        warm = new_cache(None)
        search(warm)
        later = cpu_best(repeat, lambda: search(warm))
        one_span = cpu_best(repeat, lambda: SpanCache().words(events, checkpoints[-1]))
    return {
        "first": (first, later),
        "new process": (new_process, later),
        "one span": (one_span, later),
        "append, indexing": (indexed, plain),
        "checkpoints": (len(checkpoints), len(events)),
    }


def cpu_once(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compact-every", type=int, default=25)
    args = parser.parse_args()
    _web_session.COMPACT_EVERY = args.compact_every
    sizes = [int(size) for size in args.sizes.split(",")]
    rows: dict[str, dict[int, tuple[float, float]]] = {}
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="dsh-word-index-") as tmp:
            for name, figure in measure(Path(tmp), size, args.seed, args.repeat).items():
                rows.setdefault(name, {})[size] = figure
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"CPU ms (append: us per event), best of {args.repeat}; load average {load}")
    for size, (count, events) in rows.pop("checkpoints").items():
        print(f"  {size:,}: {int(events):,} events, {int(count):,} checkpoints")
    for name, row in rows.items():
        scale, unit, base = (
            (1e6, "us", "append") if name.startswith("append") else (1e3, "", "later")
        )
        cells = [
            f"{size:,}: {t * scale:.3f} ({base} {b * scale:.3f}) {t / b:.1f}x"
            for size, (t, b) in row.items()
        ]
        first, last = row[sizes[0]][0], row[sizes[-1]][0]
        growth = f"{sizes[-1] / sizes[0]:.0f}x log: {last / first:.1f}x"
        print(f"{name:17s}{unit:>3s}  " + "  ".join(cells) + f"  {growth}")


if __name__ == "__main__":
    main()
