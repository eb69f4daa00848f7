"""What running every ``bash`` call under a keeper costs, against starting ``bash -c`` directly,
for the old keeper (a Python start per call) and the long-lived one, in the same run.

Timed, each the median of ``--calls`` sequential calls of ``true`` and of ``seq 1 200``, the three
ways taking turns call by call (so a change of load hits all three alike):

- direct (baseline): ``bash -c COMMAND`` started with asyncio in a new session, its output read
  to the end and its exit awaited — what the tool did before any keeper;
- old keeper: the ``bash`` tool's ``run`` with the per-call keeper of commit ``--old`` (its
  ``keeper.py`` and ``kept_shell.py`` read with ``git show``; skipped where git or that commit
  is not there): ``python -I -S keeper.py`` started for every call;
- keeper: the ``bash`` tool's ``run`` as it is (one keeper per dsh process, a forked call keeper
  per call; the keeper's own start is in the warm-up, not in the figures);
- the ratios to direct, and old / new.

Run: ``uv run python benchmarks/bash_keeper.py [--calls 40] [--old REV]``
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

from dsh.tools import shell
from dsh.tools.base import ToolContext
from dsh.tools.shell import BashTool

COMMANDS = {"true": "true", "200 lines": "seq 1 200"}
OLD_KEEPER = "7c8d7f09c9eda05e7fd67f51b7aafad9d836f101"
"""The last commit with a keeper started per call."""
REPOSITORY = Path(__file__).resolve().parent.parent

Timer = Callable[[str, Path], Coroutine[Any, Any, float]]


async def direct(command: str, cwd: Path) -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        "bash", "-c", command, cwd=cwd, start_new_session=True,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    await process.communicate()
    return time.perf_counter() - started


def tool(kept_shell: type | None = None) -> Timer:
    """The ``bash`` tool's ``run``, with ``kept_shell`` in place of today's ``KeptShell``."""
    bash = BashTool()

    async def timed(command: str, cwd: Path) -> float:
        context = ToolContext(workspace=cwd, session_id="bench", call_id="c")
        with mock.patch.object(shell, "KeptShell", kept_shell or shell.KeptShell):
            started = time.perf_counter()
            output = await bash.run({"command": command}, context)
            elapsed = time.perf_counter() - started
        if output.is_error:
            sys.exit(f"bash tool failed: {output.text}")
        return elapsed

    return timed


def old_kept_shell(revision: str, where: Path) -> type | None:
    """``KeptShell`` of ``revision``, over that revision's keeper program; None without it."""
    for name in ("keeper", "kept_shell"):
        shown = subprocess.run(
            ["git", "-C", str(REPOSITORY), "show", f"{revision}:src/dsh/tools/{name}.py"],
            capture_output=True,
            check=False,
        )
        if shown.returncode != 0:
            return None
        (where / f"{name}.py").write_bytes(shown.stdout)
    keeper = _load("dsh_old_keeper", where / "keeper.py")
    ours = sys.modules["dsh.tools.keeper"]
    sys.modules["dsh.tools.keeper"] = keeper  # what the old kept_shell imports
    try:
        kept_shell: type = _load("dsh_old_kept_shell", where / "kept_shell.py").KeptShell
    finally:
        sys.modules["dsh.tools.keeper"] = ours
    return kept_shell


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def main(calls: int, revision: str) -> None:
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as old:
        cwd = Path(home)
        ways: dict[str, Timer] = {"direct bash -c (baseline)": direct}
        old_shell = old_kept_shell(revision, Path(old))
        if old_shell is not None:
            ways["old keeper, one per call"] = tool(old_shell)
        else:
            print(f"(old keeper of {revision[:12]} not available: no git or no such commit)")
        ways["keeper, one per dsh"] = tool()
        print(f"median of {calls} sequential calls each (ms)")
        for name, command in COMMANDS.items():
            for way in ways.values():  # warm up (and start the long-lived keeper)
                await way(command, cwd)
            times: dict[str, list[float]] = {label: [] for label in ways}
            for _ in range(calls):
                for label, way in ways.items():
                    times[label].append(await way(command, cwd))
            medians = {label: statistics.median(values) for label, values in times.items()}
            base = medians["direct bash -c (baseline)"]
            for label, value in medians.items():
                ratio = "" if value is base else f"  {value / base:6.2f}x direct"
                print(f"{name:10}  {label:27} {value * 1000:7.1f}{ratio}")
            if old_shell is not None:
                ratio = medians["old keeper, one per call"] / medians["keeper, one per dsh"]
                print(f"{name:10}  {'old keeper / keeper':27} {ratio:7.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--old", default=OLD_KEEPER, help="the commit of the old keeper")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.calls, arguments.old))
