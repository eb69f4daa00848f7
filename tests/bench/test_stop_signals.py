"""A signal sent to the ``dsh bench run`` parent alone (SIGTERM from ``kill``, a CI timeout or a
service manager; SIGINT) stops its worker processes too, keeps the run files that finished, and
leaves a directory whose report names the runs that are missing.

Real processes: the parent is the ``dsh`` console script, its workers are spawned by it. Two
``off`` runs finish in moments; the two ``basic`` runs wait a minute on every summariser call,
so they are mid-run when the signal comes. Every wait is on a condition, with a generous
deadline (a loaded two-core machine spawns Python slowly)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped,unused-ignore]

from dsh.bench.report import NO_RUN_FILE, write_report
from tests.bench.test_runner import SPEC

DSH = str(Path(sys.executable).with_name("dsh"))
PROC = Path("/proc")
DEADLINE_S = 180.0

pytestmark = [
    pytest.mark.skipif(not (PROC / "self" / "stat").exists(), reason="reads /proc"),
    pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="worker processes need two CPUs"),
]


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name: [0] state, [1] parent pid,
    [19] start time (which tells a reused pid apart)."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def descendants(root: int) -> dict[int, str]:
    """Every live process under ``root``, pid → start time."""
    parents: dict[int, tuple[int, str]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (fields := proc_stat(int(entry.name))) and fields[0] != "Z":
            parents[int(entry.name)] = (int(fields[1]), fields[19])
    found: dict[int, str] = {}
    frontier = {root}
    while frontier:
        frontier = {pid for pid, (parent, _) in parents.items() if parent in frontier}
        found.update({pid: parents[pid][1] for pid in frontier})
    return found


def survivors(processes: dict[int, str]) -> list[int]:
    """The pids of ``processes`` still running (a zombie has exited)."""
    return [
        pid
        for pid, started in processes.items()
        if (fields := proc_stat(pid)) is not None and fields[0] != "Z" and fields[19] == started
    ]


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.1)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_parent_alone_stops_the_workers_and_keeps_what_finished(
    tmp_path: Path, stop: signal.Signals
) -> None:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    out = tmp_path / "run"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    environ["DSH_HOME"] = str(tmp_path / "home")
    command = [DSH, "bench", "run", "--scenario", str(spec), "--backend", "off,basic"]
    command += ["--seed", "5", "--seed", "6", "--jobs", "2", "--latency-ms", "60000"]
    command += ["--out", str(out)]
    parent = subprocess.Popen(
        command,
        env=environ,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the signal reaches the parent only, never the test's group
    )
    finished = [out / "runs" / f"tiny--off--seed{seed}.json" for seed in (5, 6)]
    try:
        wait_until(lambda: all(path.is_file() for path in finished), "the off runs' files")
        kept = {path: path.read_bytes() for path in finished}
        workers = descendants(parent.pid)
        assert len(workers) >= 3  # two workers, the progress queue's manager, ...
        parent.send_signal(stop)
        _, stderr = parent.communicate(timeout=DEADLINE_S)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
    assert parent.returncode == 128 + stop, stderr
    assert f"stopped by {stop.name}: 2 of 4 runs finished" in stderr
    assert f"dsh bench report {out}" in stderr
    wait_until(lambda: not survivors(workers), f"workers {survivors(workers)} to exit")
    assert sorted((out / "runs").iterdir()) == finished
    assert {path: path.read_bytes() for path in finished} == kept
    write_report(out)
    results = json.loads((out / "results.json").read_text())
    missing = [(r["backend"], r["seed"]) for r in results["runs"] if r.get("error") == NO_RUN_FILE]
    assert sorted(missing) == [("basic", 5), ("basic", 6)]
