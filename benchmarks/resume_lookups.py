"""What ``dsh run --session ID`` (and ``dsh --resume ID``) read before they open the session: the
session found by its id, its recorded workspace, its recorded settings.

The home holds ``--others`` small JSONL sessions and one long session (``_web_session``'s, of
``--events`` events, its settings recorded before its first turn, as a first run records them:
the settings line near the log's start, the farthest case for the settings read). Timed, CPU
(``time.process_time``, the machine is shared), the best of ``--repeat``, each beside a baseline
of the same run, with their ratio:

* ``find``: ``context.resolve_session_id`` and ``context.session_workspace`` with the long
  session's full id, as ``dsh run --session`` calls them; baseline ``list``: one listing of the
  store (``store.list()``, every session's header);
* ``settings``: ``session_settings.read`` (``JsonlStore.latest_settings``); baseline ``open``: the
  writable open that follows (``Session.open``, closed off the clock);

and how many session headers ``find`` decoded (every session's, for each listing; the one
session's, for each header read alone).

Run: ``uv run python benchmarks/resume_lookups.py [--events 100000] [--others 200] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _web_session import build_session
from dsh.agent import session_settings
from dsh.cli import context
from dsh.store import JsonlStore
from dsh.store import jsonl as jsonl_module
from dsh.surface import Session
from session_scale import record_settings


def cpu_best(repeat: int, work: Callable[[], object]) -> float:
    """The least CPU seconds of ``repeat`` calls of ``work``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def header_reads(work: Callable[[], object]) -> int:
    """How many session headers ``work`` decodes."""
    inner = jsonl_module.decode_header_line
    count = 0

    def counted(raw: bytes, path: Path) -> object:
        nonlocal count
        count += 1
        return inner(raw, path)

    jsonl_module.decode_header_line = counted  # type: ignore[assignment]
    try:
        work()
    finally:
        jsonl_module.decode_header_line = inner
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--others", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = JsonlStore(root / "home")
        for _ in range(args.others):
            store.create(cwd=str(root)).close()
        session_id, _, _ = build_session(store, root, args.events, 1, prologue=record_settings)

        def find() -> object:
            found = context.resolve_session_id(store, session_id)
            return context.session_workspace(store, found, None)

        def open_writable() -> float:
            """The CPU of one writable open (its close off the clock)."""
            start = time.process_time()
            session = Session.open(store, session_id, writable=True)
            spent = time.process_time() - start
            session.close()
            return spent

        opened = min(open_writable() for _ in range(args.repeat))
        settings = cpu_best(args.repeat, lambda: session_settings.read(store, session_id))
        rows = {
            "find": (cpu_best(args.repeat, find), "list", cpu_best(args.repeat, store.list)),
            "settings": (settings, "open", opened),
        }
        reads = header_reads(find)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"resume lookups: a session of {args.events:,} events among {args.others + 1} sessions; "
        f"CPU ms, best of {args.repeat}; load average {load}"
    )
    for name, (figure, baseline, base) in rows.items():
        print(
            f"{name:9s} {figure * 1e3:8.2f}  ({baseline} {base * 1e3:8.2f}, {figure / base:6.3f}x)"
        )
    print(f"headers decoded by find: {reads} ({args.others + 1} sessions in the store)")


if __name__ == "__main__":
    main()
