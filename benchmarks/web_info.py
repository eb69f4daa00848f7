"""The web session-info call (``SessionRegistry.info``) on a stored session, against a bare
decode of the same log in the same run.

A JSONL session of ``--events`` events (``scaling.py``'s prefill) is stored; then, timed: the
first ``info`` (loads the log through the read cache), a repeated ``info`` on the unchanged log
(median of 21), and, after one more turn is appended by another writer, the next ``info``.
Baseline: ``msgspec.json`` decoding every line of the log. Target: the repeated call is far below
the baseline (it reads nothing); reported, never an error exit.

Run: ``uv run python benchmarks/web_info.py [--events 20000]``
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).parent))
from dsh.agent.runtime import Route
from dsh.config import Settings
from dsh.llm.scripted import ScriptedProvider
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.web.sessions import SessionRegistry, WebRuntime
from scaling import _turn, prefill


def seconds(work) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        store = JsonlStore(root / "home")
        session_id, turns = prefill(store, root / "ws", args.events)
        path = store.log_path(session_id)
        decoder = msgspec.json.Decoder()
        bare = min(
            seconds(lambda: [decoder.decode(line) for line in path.read_bytes().splitlines()])
            for _ in range(3)
        )
        runtime = WebRuntime(Settings(), Route(ScriptedProvider([]), "scripted", 100_000))
        registry = SessionRegistry(store, runtime, default_cwd=root / "ws")

        def info() -> None:
            asyncio.run(registry.info(session_id))

        first = seconds(info)
        repeated = statistics.median(seconds(info) for _ in range(21))
        with Session.open(store, session_id, writable=True) as writer:
            writer.append_many(_turn(turns + 1, random.Random(1)))
        changed = seconds(info)
    print(
        f"session-info on {args.events:,} stored events; baseline bare decode {bare * 1e3:.1f} ms"
    )
    for name, value in (("first call", first), ("repeated", repeated), ("after a change", changed)):
        print(f"{name:16s} {value * 1e3:9.2f} ms   {value / bare:6.2f}x the baseline")


if __name__ == "__main__":
    main()
