"""The web's read cache on a stored session that another writer appends to: the time to pick up
one appended event, read on from the kept position and folded in, against a full reload of the
same log, measured in the same run; and the session-info call (``SessionRegistry.info``) on it.

A JSONL session of ``--events`` events (default 100,000; ``scaling.py``'s prefill) is stored.
Timed, for ``--rounds`` appended user messages each (written by a writer the registry does not
know, as ``dsh run`` or the TUI would write them):

- the cache alone (``ReadCache.held``: the session brought up to its stored log), caught up
  incrementally, and loaded again whole (the cache's entry forgotten first: what every change
  cost before the cache read on);
- the session-info call, both ways (a full reload also folds its stats again from the index).

Also, as before: the first ``info`` (the load), a repeated ``info`` on the unchanged log (median
of 21), and a bare ``msgspec.json`` decode of every line of the log. Medians; each pair with its
ratio. No target is checked: figures are printed, never an error exit.

Run: ``uv run python benchmarks/web_info.py [--events 100000] [--rounds 11]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).parent))
from dsh.agent.runtime import Route
from dsh.config import Settings
from dsh.events import Message, TextBlock, UserSource
from dsh.llm.scripted import ScriptedProvider
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.web.runtime import WebRuntime
from dsh.web.sessions import SessionRegistry
from scaling import prefill


def seconds(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def load_average() -> str:
    """The 1/5/15-minute load averages, for the record (figures vary with the machine's load)."""
    return " ".join(f"{load:.2f}" for load in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


def pickups(
    writer: Session, rounds: int, pick_up: Callable[[], object], forget: Callable[[], None]
) -> tuple[float, float]:
    """Median seconds of ``pick_up`` after one appended event: read on (the cache kept), and
    after ``forget`` (a full reload), rounds interleaved so both see the same log sizes."""
    kept: list[float] = []
    whole: list[float] = []
    for number in range(rounds):
        for times, reload in ((kept, False), (whole, True)):
            text = f"appended {number} {reload}"
            writer.append(
                Message(id=text, role="user", content=(TextBlock(text=text),), source=USER)
            )
            if reload:
                forget()
            times.append(seconds(pick_up))
    return statistics.median(kept), statistics.median(whole)


USER = UserSource()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    print(f"load average: {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        store = JsonlStore(root / "home")
        session_id, _ = prefill(store, root / "ws", args.events)
        path = store.log_path(session_id)
        decoder = msgspec.json.Decoder()
        bare = min(
            seconds(lambda: [decoder.decode(line) for line in path.read_bytes().splitlines()])
            for _ in range(3)
        )
        runtime = WebRuntime(Settings(), Route(ScriptedProvider([]), "scripted", 100_000))
        registry = SessionRegistry(store, runtime, default_cwd=root / "ws")

        loop = asyncio.Runner()  # one loop and its worker threads for every call, as a server

        def info() -> None:
            loop.run(registry.info(session_id))

        def held() -> None:
            with registry.readers.held(session_id):
                pass

        def forget() -> None:
            registry.readers.forget(session_id)

        first = seconds(info)
        repeated = statistics.median(seconds(info) for _ in range(21))
        with Session.open(store, session_id, writable=True) as writer:
            cache = pickups(writer, args.rounds, held, forget)
            served = pickups(writer, args.rounds, info, forget)
        loop.close()
    print(
        f"web read cache on {args.events:,} stored events: picking up one appended event "
        f"(median of {args.rounds}), read on vs a full reload, same run"
    )
    for name, (kept, whole) in (("cache (held)", cache), ("session info", served)):
        print(
            f"{name:13s} incremental {kept * 1e3:9.3f} ms   full reload {whole * 1e3:9.1f} ms   "
            f"ratio {whole / kept:8.0f}x"
        )
    print(f"session info: baseline bare decode of the log {bare * 1e3:.1f} ms")
    for name, value in (("first call", first), ("repeated", repeated)):
        print(f"{name:13s} {value * 1e3:9.2f} ms   {value / bare:6.2f}x the baseline")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
