"""What running every ``bash`` call under a keeper costs, against starting ``bash -c`` directly,
for older keepers and the one of this tree, in the same run.

Timed, each the median of ``--calls`` sequential calls of ``true`` and of ``seq 1 200``, the ways
taking turns call by call (so a change of load hits all alike), with a pause of ``--gap`` ms
after each call (a model's turn comes between two calls; without it what a keeper does once a
call is over would be timed in the next way's call):

- direct (baseline): ``bash -c COMMAND`` started with asyncio in a new session, its output read
  to the end and its exit awaited — what the tool did before any keeper;
- each ``--old`` commit's keeper: the ``bash`` tool's ``run`` with the ``keeper.py``,
  ``kept_process.py`` (where there is one) and ``kept_shell.py`` of that commit, read with ``git
  show`` (skipped where git or the commit is not there). By default :data:`PER_CALL`, a Python
  start per call, and :data:`FORK_PER_CALL`, one keeper per dsh forking a call keeper per call;
- this tree's keeper: the ``bash`` tool's ``run`` as it is (one keeper per dsh, a call keeper
  forked beforehand waiting idle for each call);
- the ratios to direct, and each old one / this tree's.

The keepers' own starts are in the warm-up, not in the figures.

Run: ``uv run python benchmarks/bash_keeper.py [--calls 40] [--old REV ...]``
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
PER_CALL = "7c8d7f09c9eda05e7fd67f51b7aafad9d836f101"
"""The last commit with a keeper started per call."""
FORK_PER_CALL = "cdcc0b95d3d39d8e11d1e624c868443a87668e03"
"""The last commit whose keeper forked a call keeper when a call came."""
MODULES = ("keeper", "kept_process", "kept_shell")
"""The modules of a keeper, each importing the ones before it."""
BASELINE = "direct bash -c (baseline)"
CURRENT = "keeper of this tree"
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
    """``KeptShell`` of ``revision``, over that revision's keeper program and its own keeper
    link; None without it."""
    where.mkdir()
    found = []
    for name in MODULES:
        shown = subprocess.run(
            ["git", "-C", str(REPOSITORY), "show", f"{revision}:src/dsh/tools/{name}.py"],
            capture_output=True,
            check=False,
        )
        if shown.returncode == 0:
            (where / f"{name}.py").write_bytes(shown.stdout)
            found.append(name)
    if found[:1] != ["keeper"] or found[-1:] != ["kept_shell"]:
        return None
    ours = {name: sys.modules[f"dsh.tools.{name}"] for name in found}
    try:
        for name in found:  # each sees the old modules before it as dsh's
            old = _load(f"dsh_{revision[:12]}_{name}", where / f"{name}.py")
            sys.modules[f"dsh.tools.{name}"] = old
        kept_shell: type = old.KeptShell
    finally:
        sys.modules.update({f"dsh.tools.{name}": module for name, module in ours.items()})
    return kept_shell


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def main(calls: int, gap: float, revisions: list[str]) -> None:
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as old:
        cwd = Path(home)
        ways: dict[str, Timer] = {BASELINE: direct}
        for revision in revisions:
            old_shell = old_kept_shell(revision, Path(old) / revision)
            if old_shell is None:
                print(f"(keeper of {revision[:12]} not available: no git or no such commit)")
            else:
                ways[f"keeper of {revision[:12]}"] = tool(old_shell)
        ways[CURRENT] = tool()
        print(f"median of {calls} sequential calls each, {gap * 1000:g} ms apart (ms)")
        for name, command in COMMANDS.items():
            for way in ways.values():  # warm up (and start the long-lived keepers)
                await way(command, cwd)
            times: dict[str, list[float]] = {label: [] for label in ways}
            for _ in range(calls):
                for label, way in ways.items():
                    times[label].append(await way(command, cwd))
                    await asyncio.sleep(gap)
            medians = {label: statistics.median(values) for label, values in times.items()}
            for label, value in medians.items():
                ratio = "" if label == BASELINE else f"  {value / medians[BASELINE]:6.2f}x direct"
                print(f"{name:10}  {label:27} {value * 1000:7.2f}{ratio}")
            for label in list(medians)[1:-1]:
                ratio = medians[label] / medians[CURRENT]
                print(f"{name:10}  {label + ' / this tree':38} {ratio:5.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--gap", type=float, default=20.0, help="ms between calls (default 20)")
    parser.add_argument(
        "--old",
        action="append",
        metavar="REV",
        help=f"a commit whose keeper to time too (default: {PER_CALL[:12]}, {FORK_PER_CALL[:12]})",
    )
    arguments = parser.parse_args()
    revisions = arguments.old or [PER_CALL, FORK_PER_CALL]
    asyncio.run(main(arguments.calls, arguments.gap / 1000, revisions))
