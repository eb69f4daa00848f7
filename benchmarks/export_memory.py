"""Memory of ``dsh sessions export`` and ``sessions show --view settings``, against opening the
session they read, in the same run.

For each ``--events`` size, one JSONL session of the web benchmarks' shape
(``_web_session.build_session``: turns of 1-3 steps, 0.3-3 KB ``read_file`` results, a
``/compact`` every 250 turns) is stored under a temporary ``DSH_HOME``, with its settings
recorded first, as a first run records them. Then, each in a fresh subprocess with the CLI
imported beforehand, the increase of the process's peak RSS (``VmHWM``) over the value just
before:

* ``open`` (the baseline): ``Session.open`` of the session, held — what any command that
  loads the log pays;
* ``export md|jsonl|upstream``: ``dsh sessions export ID --format F -o FILE``;
* ``show settings``: ``dsh sessions show ID --view settings``.

Printed: each figure, the export's size, and the ratio to the open. Targets: an export adds at
most ``EXPORT_EXTRA`` (8 MiB) to the open's peak at any size (what it writes at a time, never
the whole export: the ratio tends to 1x as the log grows); the settings view <= 0.1x the open
(it reads the settings record, never the log). A miss is reported, never an error exit.

Run: ``uv run python benchmarks/export_memory.py [--events 10000 100000]``
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _web_session import build_session
from dsh.agent import session_settings
from dsh.config import Settings
from dsh.store import JsonlStore
from dsh.surface import Session

EXPORT_EXTRA = 8 * 1024 * 1024
SETTINGS_TARGET = 0.1
MODES = ("export md", "export jsonl", "export upstream", "show settings")


def status(field: str) -> int:
    """A ``/proc/self/status`` figure in bytes (``VmHWM``: the peak RSS)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"no {field} in /proc/self/status (Linux only)")


def child(mode: str, home: str, session_id: str, out: str) -> None:
    """Subprocess mode: print the peak RSS increase of one command (or of the open)."""
    for name in ("dsh.agent.settings_view", "dsh.cli.sessions", "dsh.interop.upstream_write"):
        importlib.import_module(name)  # their import's cost lands before the measure
    from dsh.cli.main import cli

    gc.collect()
    before = status("VmHWM")
    if mode == "open":
        held = Session.open(JsonlStore(Path(home)), session_id)
        gc.collect()
    else:
        command, what = mode.split()
        argv = ["sessions", "export", session_id, "--format", what, "-o", out]
        if command == "show":
            argv = ["sessions", "show", session_id, "--view", what]
        with open(os.devnull, "w") as sink:
            sys.stdout = sink
            cli.main(argv, standalone_mode=False)
            sys.stdout = sys.__stdout__
    print(json.dumps({"peak": status("VmHWM") - before}))
    if mode == "open":
        held.close()


def measure(mode: str, home: Path, session_id: str, out: Path) -> int:
    argv = [sys.executable, __file__, "--child", mode, str(home), session_id, str(out)]
    env = {**os.environ, "DSH_HOME": str(home)}
    result = subprocess.run(argv, check=True, capture_output=True, text=True, env=env)
    return json.loads(result.stdout.splitlines()[-1])["peak"]  # type: ignore[no-any-return]


def with_settings(session: Session) -> None:
    """What a first run records before its first turn: its settings."""
    snapshot = session_settings.snapshot(
        Settings(), "scripted", "scripted", None, session.header.cwd
    )
    session_settings.record(session, snapshot)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)
    mib = 1024 * 1024
    with tempfile.TemporaryDirectory(prefix="dsh-export-") as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        for events in args.events:
            home = root / f"home{events}"
            store = JsonlStore(home)
            session_id, _, _ = build_session(
                store, root / "ws", events, seed=1, prologue=with_settings
            )
            size = store.log_path(session_id).stat().st_size
            print(f"{events:,} events, log {size / mib:.1f} MiB", flush=True)
            opened = measure("open", home, session_id, root / "unused")
            print(f"  open (baseline)        {opened / mib:7.1f} MiB", flush=True)
            for mode in MODES:
                out = root / f"out.{mode.split()[1]}"
                peak = measure(mode, home, session_id, out)
                if mode == "show settings":
                    target = f"<= {SETTINGS_TARGET}x the open"
                    met = peak <= SETTINGS_TARGET * opened
                else:
                    target = f"<= the open + {EXPORT_EXTRA // mib} MiB"
                    met = peak <= opened + EXPORT_EXTRA
                wrote = f"  ({out.stat().st_size / mib:.1f} MiB written)" if out.exists() else ""
                print(
                    f"  {mode:<22} {peak / mib:7.1f} MiB   {peak / opened:5.2f}x the open   "
                    f"target {target} {'PASS' if met else 'MISS'}{wrote}",
                    flush=True,
                )
                out.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
