"""``dsh sessions stats`` / ``dsh sessions show`` on a long stored session, against a bare
decode of the same log in the same run.

A JSONL session of ``--events`` events (``scaling.py``'s prefill) is stored under a temporary
``DSH_HOME``; each command runs in-process through the click entry point with its output
discarded. Baseline: reading the file and ``msgspec.json`` decoding every line, untyped, with the
cyclic collector off. The machine is shared, so the baseline and the commands are timed
round-robin (baseline, stats, show, baseline, …, ``--rounds`` rounds): each round's ratio is a
command's time over the baseline's time in that round, and the median and range of those ratios
are printed with the load average. Target: median <= 1.2x the baseline; a miss is reported.

Run: ``uv run python benchmarks/sessions_cli.py [--events 100000] [--rounds 7]``
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from dsh.cli.main import cli
from dsh.store import JsonlStore
from scaling import prefill

TARGET = 1.2


def timed(work: Callable[[], object]) -> float:
    """Seconds one call of ``work`` takes."""
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def spread(values: list[float], fmt: str) -> str:
    """``median (min–max)`` of ``values``."""
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    names = ("sessions stats", "sessions show")
    times: dict[str, list[float]] = {"baseline": [], **{name: [] for name in names}}
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

        runner = CliRunner()

        def command(name: str) -> Callable[[], None]:
            def run() -> None:
                result = runner.invoke(cli, [*name.split(), session_id])
                assert result.exit_code == 0, result.output

            return run

        load_before = os.getloadavg()[0]
        for _ in range(args.rounds):
            times["baseline"].append(timed(decode))
            for name in names:
                gc.collect()
                times[name].append(timed(command(name)))
        load_after = os.getloadavg()[0]
    print(
        f"{args.events:,} events, {args.rounds} rounds round-robin; "
        f"load average {load_before:.1f} -> {load_after:.1f}"
    )
    print(f"baseline bare decode  {spread(times['baseline'], '.3f')} s")
    for name in names:
        ratios = [t / b for t, b in zip(times[name], times["baseline"], strict=True)]
        verdict = "PASS" if statistics.median(ratios) <= TARGET else "MISS"
        print(
            f"{name:16s}      {spread(times[name], '.3f')} s   "
            f"ratio {spread(ratios, '.2f')}   target <= {TARGET}x {verdict}"
        )


if __name__ == "__main__":
    main()
