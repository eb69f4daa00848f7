"""What showing a running command's output live costs the ``bash`` tool: its wall time for a
command printing ``--mb`` megabytes, without a tail (``output_tail`` None, the tool as before)
and with one fed through the process's ``RUNNING_OUTPUT`` (``dsh.agent.tool_progress``: the
lines computed, masked and told to a listener at most ten times a second, as the faces get
them), with a secret to mask; the best of ``--repeat`` runs each, interleaved, and their ratio.
The tool's time includes the command's and the pipe's, which vary on a loaded machine; the
reader's alone (``CappedOutput`` fed the same text in 64 KiB reads, in this process), the part
the tail adds to, is measured the same two ways.

Run: ``uv run python benchmarks/bash_tail.py [--mb 100] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from _timing import best_of
from dsh.agent.tool_progress import RUNNING_OUTPUT, Lines
from dsh.tools.base import ToolContext
from dsh.tools.output_tail import OutputTail
from dsh.tools.secrets import SecretPolicy
from dsh.tools.shell import BashTool, CappedOutput

LINE = "collected 12 items; tests/test_parse.py::test_empty PASSED [ 42%]"
SECRETS = SecretPolicy(values=(("BENCH_API_KEY", "bench-secret-0123456789"),))
CHUNK = 65_536


async def tool_run(workspace: Path, megabytes: int, *, tail: bool, seq: int) -> float:
    output = RUNNING_OUTPUT.begin("bench", seq, SECRETS) if tail else None
    ctx = ToolContext(workspace=workspace, session_id="bench", call_id="c", output_tail=output)
    command = f"yes '{LINE}' | head -c {megabytes * 1_000_000}"
    start = time.perf_counter()
    result = await BashTool(SECRETS).run({"command": command, "timeout": 600}, ctx)
    elapsed = time.perf_counter() - start
    RUNNING_OUTPUT.end("bench", seq)
    assert not result.is_error, result.text[:200]
    return elapsed


def reader_run(megabytes: int, *, tail: bool) -> None:
    chunk = ((LINE + "\n").encode() * (CHUNK // len(LINE) + 1))[:CHUNK]
    out = CappedOutput(secrets=SECRETS, tail=OutputTail(SECRETS, lambda: None) if tail else None)
    for _ in range(megabytes * 1_000_000 // CHUNK):
        out.feed(chunk)
    out.feed(b"", final=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    told: list[int] = []

    def listener(session_id: str, lines: dict[int, Lines]) -> None:
        told.append(len(lines))

    RUNNING_OUTPUT.watch(listener)
    with tempfile.TemporaryDirectory() as directory:
        workspace = Path(directory)
        without, with_tail = float("inf"), float("inf")
        for seq in range(args.repeat):  # interleaved: a loaded machine slows both alike
            without = min(without, asyncio.run(tool_run(workspace, args.mb, tail=False, seq=seq)))
            with_tail = min(
                with_tail, asyncio.run(tool_run(workspace, args.mb, tail=True, seq=seq))
            )
    plain = best_of(args.repeat, lambda: reader_run(args.mb, tail=False))
    tailed = best_of(args.repeat, lambda: reader_run(args.mb, tail=True))
    print(f"bash printing {args.mb} MB, best of {args.repeat}:")
    print(f"  the tool, without the tail feed {without:.3f} s")
    print(f"  the tool, with the tail feed    {with_tail:.3f} s (ratio {with_tail / without:.2f}x)")
    print(f"  (the listener was told {len(told)} times in {args.repeat} runs)")
    print(f"  its reader alone, without {plain:.3f} s, with {tailed:.3f} s", end="")
    print(f" (ratio {tailed / plain:.2f}x)")


if __name__ == "__main__":
    main()
