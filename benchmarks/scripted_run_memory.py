"""Memory of one long ``dsh run --script`` process, against a process that resumes its log.

A workspace of ``FILES`` source files of about 3.5 KB is made under a temporary ``DSH_HOME``,
with a script whose every turn reads one of them (``read_file``) then replies. For each of
``--turns`` (several sizes), one ``dsh run --yes --script S --context-window 16384`` is given
that many prompts in one process (compaction passes run as the window fills); its peak RSS
(``ru_maxrss`` of that child, ``os.wait4``) is the figure. Baseline, measured in the same run
on the log it wrote: ``dsh run --session ID`` with one more prompt, a fresh process that loads
that log and runs one turn — what holding the session costs. A run whose memory tracks its log
stays near the baseline at any length; one that keeps every request grows by tens of KB a turn.
Printed: both peaks, their ratio, and the run's growth per turn between the sizes. Target: the
ratio at the longest run <= 1.3x. A miss is reported, never an error exit.

Run: ``uv run python benchmarks/scripted_run_memory.py [--turns 300 1200]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FILES = 40
TARGET = 1.3
WINDOW = "16384"


def script(turns: int) -> list[dict[str, object]]:
    """Two model calls a turn: read one file, then say what it found."""
    entries: list[dict[str, object]] = []
    for i in range(turns):
        path = f"src/f{i % FILES}.py"
        entries.append(
            {"text": "", "toolCalls": [{"name": "read_file", "arguments": {"path": path}}]}
        )
        entries.append({"text": f"Done step {i}: looked at {path}, it is fine. ZEBRA-{i} noted."})
    return entries


def workspace(root: Path) -> None:
    for i in range(FILES):
        lines = [
            f"def function_{i}_{n}(value):\n    return value * {n} + {i}\n\n" for n in range(80)
        ]
        (root / "src").mkdir(parents=True, exist_ok=True)
        (root / "src" / f"f{i}.py").write_text("".join(lines)[:3500])


def peak_rss(argv: list[str], cwd: Path, env: dict[str, str]) -> int:
    """The peak RSS in bytes of one child running ``argv`` (it must succeed)."""
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:6])} … exited {child.returncode}")
    return usage.ru_maxrss * 1024


def measure(turns: int, root: Path) -> tuple[int, int]:
    """(peak RSS of a run of ``turns`` prompts, peak RSS of resuming its log for one more)."""
    home, ws = root / f"home{turns}", root / "ws"
    env = {**os.environ, "DSH_HOME": str(home)}
    path = root / f"script{turns}.json"
    path.write_text(json.dumps(script(turns + 1)))
    dsh = [str(Path(sys.executable).with_name("dsh")), "run", "--yes", "--script", str(path)]
    prompts = [f"task {i}: check the module and report" for i in range(turns)]
    run = peak_rss([*dsh, "--context-window", WINDOW, *prompts], ws, env)
    (session_id,) = [p.parent.name for p in (home / "sessions").rglob("*.jsonl")]
    resumed = peak_rss([*dsh, "--session", session_id, "one more"], ws, env)
    return run, resumed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[300, 1200])
    args = parser.parse_args()
    mib = 1024 * 1024
    figures = []
    with tempfile.TemporaryDirectory(prefix="dsh-scripted-") as tmp:
        root = Path(tmp)
        workspace(root / "ws")
        for turns in sorted(args.turns):
            run, resumed = measure(turns, root)
            figures.append((turns, run, resumed))
            print(
                f"{turns:>6} turns: run peak {run / mib:7.1f} MiB   resumed (baseline) "
                f"{resumed / mib:7.1f} MiB   ratio {run / resumed:5.2f}x",
                flush=True,
            )
    (first, run0, _), (last, run1, resumed1) = figures[0], figures[-1]
    if last > first:
        print(f"growth of the run: {(run1 - run0) / (last - first) / 1024:.1f} KiB a turn")
    ratio = run1 / resumed1
    verdict = "PASS" if ratio <= TARGET else "MISS"
    print(f"ratio at {last} turns {ratio:.2f}x   target <= {TARGET}x {verdict}")


if __name__ == "__main__":
    main()
