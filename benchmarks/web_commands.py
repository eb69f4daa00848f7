"""The web's prompt-command list (``GET /api/sessions/{id}/commands``, what the composer asks on
Tab after ``/`` and on an unknown ``/word``) on a long session, against the session info
(``GET /api/sessions/{id}``) and a request that computes nothing (``GET /api/warnings``), all in
the same run over real HTTP.

The list needs the session's workspace (its header's ``cwd``) and the command files; the info
sums the session's figures (context use, cache hits, title). The route once built the whole
info to read the workspace from it, so on a long session it cost what the info costs.

A JSONL session of ``--events`` events (default 100,000; ``_web_session.py``'s long session,
the one the web benchmarks serve) is stored, with one prompt command in ``$DSH_HOME/commands``.
``dsh web``'s app is served on 127.0.0.1 (uvicorn in a thread, the keyless scripted runtime);
one keep-alive HTTP connection asks, rounds interleaved so each request sees the same server:

- stored: the session not open here, its log kept by the read cache (the page asked for the
  info first, as it does when it opens a session);
- open: the session resumed (open for writing here), idle;
- cold: the stored session with the read cache's copy of it forgotten before each request (a
  server that has not read the log yet, or read four other sessions since).

Printed: the median ms of each request, the list's ratio to the info and its time over the
floor (the bare request). Figures are printed, never an error exit on timings; a list that is
not the one expected is an error exit.

Run: ``uv run python benchmarks/web_commands.py [--events 100000] [--rounds 21] [--cold 5]``
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _web_session import build_session
from context_report import load_average
from dsh.agent.runtime import Route
from dsh.config import Settings
from dsh.llm.scripted import ScriptedProvider
from dsh.store import JsonlStore
from dsh.web import BackgroundServer, SessionRegistry, WebRuntime, create_app

TOKEN = "benchmark-token-0123456789abcdef"
EXPECTED = [{"name": "review", "description": "Review the diff.", "scope": "user"}]


class Client:
    """One keep-alive HTTP connection to the server, with the token."""

    def __init__(self, server: BackgroundServer) -> None:
        self.connection = http.client.HTTPConnection(server.host, server.port, timeout=120)
        self.headers = {"Authorization": f"Bearer {TOKEN}"}

    def ask(self, method: str, path: str) -> Any:
        self.connection.request(method, path, headers=self.headers)
        response = self.connection.getresponse()
        body = response.read()
        if response.status >= 300:
            raise SystemExit(f"{method} {path}: {response.status} {body[:200]!r}")
        return json.loads(body)


def medians(
    rounds: int, requests: dict[str, Callable[[], object]], before: Callable[[], object] = list
) -> dict[str, float]:
    """The median ms of each request, ``rounds`` rounds in which each runs once (``before``
    untimed ahead of every request)."""
    times: dict[str, list[float]] = {name: [] for name in requests}
    for _ in range(rounds):
        for name, request in requests.items():
            before()
            start = time.perf_counter()
            request()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(taken) * 1e3 for name, taken in times.items()}


def report(state: str, figures: dict[str, float]) -> None:
    commands, info = figures["commands"], figures["info"]
    line = (
        f"{state:7s} commands {commands:8.2f} ms   session info {info:8.2f} ms   "
        f"commands/info {commands / info:5.2f}x"
    )
    if "bare" in figures:
        floor = figures["bare"]
        line += f"   bare request {floor:5.2f} ms   commands over it {commands - floor:7.2f} ms"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--cold", type=int, default=5, help="rounds with the read cache emptied")
    args = parser.parse_args()
    print(f"load average: {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, workspace = root / "home", root / "ws"
        workspace.mkdir()
        os.environ["DSH_HOME"] = str(home)
        (home / "commands").mkdir(parents=True)
        (home / "commands" / "review.md").write_text("Review the diff.")
        store = JsonlStore(home)
        session_id, turns, compactions = build_session(store, workspace, args.events, seed=7)
        size = store.log_path(session_id).stat().st_size
        print(
            f"session: {args.events:,} events, {turns:,} turns, {compactions} compactions, "
            f"{size / 1e6:.1f} MB"
        )
        runtime = WebRuntime(Settings(), Route(ScriptedProvider([]), "scripted", 100_000))
        registry = SessionRegistry(store, runtime, default_cwd=workspace)
        with BackgroundServer(create_app(registry, token=TOKEN)) as server:
            client = Client(server)
            base = f"/api/sessions/{session_id}"
            if client.ask("GET", f"{base}/commands")["commands"] != EXPECTED:
                raise SystemExit("the command list is not the one written")
            requests = {
                "bare": lambda: client.ask("GET", "/api/warnings"),
                "commands": lambda: client.ask("GET", f"{base}/commands"),
                "info": lambda: client.ask("GET", base),
            }
            client.ask("GET", base)  # the page's first ask: the read cache holds the log
            print(f"GET …/commands against GET …/{{id}} (median of {args.rounds}, same run)")
            report("stored", medians(args.rounds, requests))
            cold = medians(
                args.cold,
                {"commands": requests["commands"], "info": requests["info"]},
                before=lambda: server.call(registry.readers.forget, session_id),
            )
            client.ask("POST", f"{base}/resume")
            report("open", medians(args.rounds, requests))
            report("cold", cold)
            client.connection.close()
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
