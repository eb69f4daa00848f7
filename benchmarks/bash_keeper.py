"""What running every ``bash`` call under its keeper costs, against starting ``bash -c`` directly,
in the same run.

The ``bash`` tool starts a keeper process (``dsh.tools.keeper``: a Linux child subreaper that
holds what the command starts and kills it when dsh exits) between dsh and the shell. Timed,
each the median of ``--calls`` sequential calls of ``true`` and of ``echo`` with 200 lines:

- direct (baseline): ``bash -c COMMAND`` started with asyncio in a new session, its output read
  to the end and its exit awaited — what the tool did before the keeper;
- tool: the ``bash`` tool's ``run`` (keeper, scrubbed environment, masking, output cap);
- the ratio tool / direct.

Run: ``uv run python benchmarks/bash_keeper.py [--calls 40]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dsh.tools.base import ToolContext
from dsh.tools.shell import BashTool

COMMANDS = {"true": "true", "200 lines": "seq 1 200"}


async def direct(command: str, cwd: Path) -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        "bash", "-c", command, cwd=cwd, start_new_session=True,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    await process.communicate()
    return time.perf_counter() - started


async def tool(command: str, cwd: Path, bash: BashTool) -> float:
    context = ToolContext(workspace=cwd, session_id="bench", call_id="c")
    started = time.perf_counter()
    output = await bash.run({"command": command}, context)
    elapsed = time.perf_counter() - started
    if output.is_error:
        sys.exit(f"bash tool failed: {output.text}")
    return elapsed


async def main(calls: int) -> None:
    bash = BashTool()
    with tempfile.TemporaryDirectory() as home:
        cwd = Path(home)
        print(f"median of {calls} sequential calls each (ms)")
        for name, command in COMMANDS.items():
            await direct(command, cwd)  # warm both paths once
            await tool(command, cwd, bash)
            base = statistics.median([await direct(command, cwd) for _ in range(calls)])
            kept = statistics.median([await tool(command, cwd, bash) for _ in range(calls)])
            print(f"{name:10}  direct bash -c (baseline) {base * 1000:7.1f}")
            print(f"{name:10}  bash tool under keeper    {kept * 1000:7.1f}")
            print(f"{name:10}  ratio tool / direct       {kept / base:7.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    asyncio.run(main(parser.parse_args().calls))
