"""What the session list's live states cost an idle ``dsh web``: the sweep of the writer-lock
files (``dsh.web.list_states``) against the same server without it, in the same run.

For stores of ``--sessions`` JSONL sessions (default 100 and 1,000; each created and closed, so
its lock file is there and empty, as a clean release leaves it; one in 20 holds the pid of a
process that has exited, as a crashed writer leaves it) a ``dsh web`` (a ``BackgroundServer``
in this process) lists them once (``GET /api/sessions``: the sessions the sweep looks at) and
one page's server stream (``WS /api/live``) stays connected, so the sweep runs. Nothing else
happens: the figure is the idle server's CPU time (this process's, every thread: the server's
loop, its worker threads, the idle client) per second of wall time, over ``--seconds`` (default
10), without the sweep (the baseline: ``ListStates.every = None``) and with it (every
``SWEEP_SECONDS``).

Also timed, each the best of ``--repeat`` runs: one sweep of the store (each lock file
stat'ed, the non-empty ones read), against reading every lock file (``dsh.web.follow
.lock_holder`` per session, what a sweep without the stat would do).

Reported, never an error exit on timings.

Run: ``uv run python benchmarks/web_list_states.py [--sessions 100,1000] [--seconds 10]
[--repeat 7]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).parent))
from _timing import best_of
from context_report import load_average
from dsh.agent.runtime import Route
from dsh.config import Settings
from dsh.llm.scripted import ScriptedProvider
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.web import BackgroundServer, SessionRegistry, WebRuntime, create_app
from dsh.web.follow import lock_holder
from dsh.web.list_states import SWEEP_SECONDS, ListStates
from dsh.web.live import LiveHub

TOKEN = "bench-token-0123456789abcdefghijkl"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def build_store(root: Path, sessions: int) -> JsonlStore:
    """``sessions`` sessions created and closed; one in 20 with a dead writer's pid left in its
    lock file."""
    (root / "ws").mkdir()
    store = JsonlStore(root / "home")
    exited = subprocess.Popen(["true"])
    exited.wait()  # reaped: its pid is no live process's
    for n in range(sessions):
        session = Session.create(store, cwd=root / "ws")
        session.close()
        if n % 20 == 0:
            store.lock_path(session.id).write_text(f"{exited.pid}\ndsh run\n")
    return store


def idle_cpu(store: JsonlStore, seconds: float, every: float | None) -> float:
    """CPU ms per wall second of the idle server with one page's server stream connected."""
    provider = ScriptedProvider([], model="scripted")
    registry = SessionRegistry(
        store, WebRuntime(Settings(), Route(provider, "scripted", 32_000)), default_cwd=Path.cwd()
    )
    registry.list_states.every = every
    server = BackgroundServer(create_app(registry, token=TOKEN)).start()
    try:
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=60) as api:
            listed = api.get("/api/sessions").json()["sessions"]
        url = f"ws://127.0.0.1:{server.port}/api/live"
        with connect(url, additional_headers=AUTH, proxy=None) as socket:
            socket.recv(timeout=10)  # the hello
            time.sleep(max(2.0, 2 * (every or 0)))  # settled: the first sweeps read every file
            cpu, wall = time.process_time(), time.monotonic()
            time.sleep(seconds)
            cpu, wall = time.process_time() - cpu, time.monotonic() - wall
            assert len(listed) == len(registry.list_states.holders)
    finally:
        server.stop()
    return 1000 * cpu / wall


def report(store: JsonlStore, sessions: int, seconds: float, repeat: int) -> None:
    ids = [header.id for header in store.list()]
    base = idle_cpu(store, seconds, None)
    swept = idle_cpu(store, seconds, SWEEP_SECONDS)
    print(
        f"{sessions:>6} sessions: idle CPU {base:6.2f} ms/s without the sweep (baseline),"
        f" {swept:6.2f} ms/s with it ({swept - base:+.2f} ms/s,"
        f" {(swept - base) / 10:+.3f} % of a core)"
    )
    states = ListStates(store, LiveHub("(server)"), {})
    states.sweep(ids)  # the lock files' names, made once
    sweep_ms = 1000 * best_of(repeat, lambda: states.sweep(ids))
    read_ms = 1000 * best_of(repeat, lambda: [lock_holder(store, i) for i in ids])
    print(
        f"{'':>6}  one sweep {sweep_ms:7.2f} ms; reading every lock file"
        f" {read_ms:7.2f} ms ({read_ms / sweep_ms:.1f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="100,1000")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"load average: {load_average()}")
    print(f"sweep every {SWEEP_SECONDS:g} s; idle CPU over {args.seconds:g} s, ms per second")
    for sessions in (int(n) for n in args.sessions.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            report(build_store(Path(tmp), sessions), sessions, args.seconds, args.repeat)
    print(f"load average: {load_average()}")


if __name__ == "__main__":
    main()
