"""``dsh sessions stats`` / ``dsh sessions show`` on a long stored session, against a bare
decode of the same log in the same run.

A JSONL session of ``--events`` events (``scaling.py``'s prefill) is stored under a temporary
``DSH_HOME``; each command runs in-process through the click entry point with its output
discarded (best of ``--repeat``). Baseline: reading the file and ``msgspec.json`` decoding every
line, untyped, with the cyclic collector off (best of ``--repeat``). Target: <= 1.2x the
baseline; a miss is reported.

Run: ``uv run python benchmarks/sessions_cli.py [--events 100000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

import msgspec
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from dsh.cli.main import cli
from dsh.store import JsonlStore
from scaling import prefill

TARGET = 1.2


def best(repeat: int, work) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        os.environ["DSH_HOME"] = str(root / "home")
        store = JsonlStore(root / "home")
        session_id, _ = prefill(store, root / "ws", args.events)
        path = store.log_path(session_id)
        decoder = msgspec.json.Decoder()

        def decode() -> None:  # the collector off: the fastest bare decode
            gc.disable()
            try:
                [decoder.decode(line) for line in path.read_bytes().splitlines()]
            finally:
                gc.enable()

        bare = best(args.repeat, decode)
        runner = CliRunner()

        def command(*argv: str) -> None:
            result = runner.invoke(cli, ["sessions", *argv, session_id])
            assert result.exit_code == 0, result.output

        rows = [
            ("sessions stats", best(args.repeat, lambda: command("stats"))),
            ("sessions show", best(args.repeat, lambda: command("show"))),
        ]
    print(f"{args.events:,} events; baseline bare decode {bare:.3f} s")
    for name, seconds in rows:
        ratio = seconds / bare
        verdict = "PASS" if ratio <= TARGET else "MISS"
        print(f"{name:16s} {seconds:7.3f} s   {ratio:5.2f}x   target <= {TARGET}x {verdict}")


if __name__ == "__main__":
    main()
