"""Reading a stored session's recorded settings (``session_settings.read``) at 1k, 10k and 100k
events, in both stores: what ``dsh run --session``, ``dsh --resume``, ``--replay`` and the
picker's check of a chosen session pay before they open it (the faces that hold the session read
its per-type index instead: no store read).

Each session is ``_web_session.build_session``'s (turns of 1-3 steps, ``read_file`` results of
0.3-3 KB, a ``/compact`` every 250 turns), written to a JSONL store and copied whole into a
SQLite store. Its settings are recorded before its first turn, as a first run records them, so
the last ``session/settings`` event is near the log's start: the farthest case. Timed in CPU
(``time.process_time``: the machine is shared), the best of ``--repeat``:

* ``far``: the settings read with that event near the log's start;
* ``far, cold``: the same with the store's settings record, if it keeps one, deleted first (a
  log an older dsh wrote, or one no reader or writer recorded yet; the read records it);
* ``near``: after a writer appended one more ``session/settings`` event at the log's end;

each beside its baseline ``header``: ``store.header_of(id)``, one session's header read alone
(a lookup whose cost does not depend on the log's length), and their ratio. Then each figure's
growth from the smallest size to the largest, next to the log's.

Run: ``uv run python benchmarks/settings_read.py [--sizes 1000,10000,100000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _web_session import build_session
from dsh.agent import session_settings
from dsh.config import Settings
from dsh.store import EventStore, JsonlStore, SqliteStore
from dsh.store import derived as derived_files
from dsh.surface import Session


def cpu_best(repeat: int, work: Callable[[], object]) -> float:
    """The least CPU seconds of ``repeat`` calls of ``work``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def record_first_settings(session: Session) -> None:
    snapshot = session_settings.snapshot(
        Settings(), "scripted", "scripted", None, session.header.cwd
    )
    session_settings.record(session, snapshot)


def append_settings_at_the_end(store: EventStore, session_id: str) -> None:
    with Session.open(store, session_id, writable=True) as session:
        snapshot = session_settings.snapshot(
            Settings(), "scripted", "scripted-2", None, session.header.cwd
        )
        assert session_settings.record(session, snapshot) is not None


def forget_record(home: Path, session_id: str) -> None:
    """Delete the settings record the store keeps beside the log (none before it kept one)."""
    where = getattr(derived_files, "settings_record_path", None)
    if where is not None:
        with contextlib.suppress(FileNotFoundError):
            where(home, session_id).unlink()


def measure(home: Path, store: EventStore, session_id: str, repeat: int) -> dict[str, float]:
    figures = {"header": cpu_best(repeat, lambda: store.header_of(session_id))}
    read = lambda: session_settings.read(store, session_id)  # noqa: E731
    assert read() is not None
    figures["far"] = cpu_best(repeat, read)

    def cold() -> None:
        forget_record(home, session_id)
        start = time.process_time()
        read()
        cold_times.append(time.process_time() - start)

    cold_times: list[float] = []
    for _ in range(repeat):
        cold()
    figures["far, cold"] = min(cold_times)
    append_settings_at_the_end(store, session_id)
    recorded = read()
    assert recorded is not None and recorded.model == "scripted-2"
    figures["near"] = cpu_best(repeat, read)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    rows: dict[str, dict[int, tuple[float, float]]] = {}
    lengths: dict[int, tuple[int, float]] = {}
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="dsh-settings-read-") as tmp:
            jsonl_home, sqlite_home = Path(tmp) / "jsonl", Path(tmp) / "sqlite"
            jsonl = JsonlStore(jsonl_home)
            session_id, _, _ = build_session(
                jsonl, Path(tmp), size, args.seed, prologue=record_first_settings
            )
            with Session.open(jsonl, session_id) as built:
                events = list(built.events)
                created = built.header.created_at
            sqlite = SqliteStore(sqlite_home)
            sqlite.create(cwd=tmp, seed=events, session_id=session_id, created_at=created).close()
            lengths[size] = (len(events), jsonl.log_path(session_id).stat().st_size / 1e6)
            for name, home, store in (
                ("jsonl", jsonl_home, jsonl),
                ("sqlite", sqlite_home, sqlite),
            ):
                figures = measure(home, store, session_id, args.repeat)
                for figure in ("far", "far, cold", "near"):
                    row = rows.setdefault(f"{name} {figure}", {})
                    row[size] = (figures[figure], figures["header"])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"CPU ms, best of {args.repeat}; load average {load}")
    for size in sizes:
        count, megabytes = lengths[size]
        print(f"  {size:,}: {count:,} events, JSONL log {megabytes:.1f} MB")
    for name, row in rows.items():
        cells = [
            f"{size:,}: {t * 1e3:.3f} (header {b * 1e3:.3f}) {t / b:.1f}x"
            for size, (t, b) in row.items()
        ]
        first, last = row[sizes[0]][0], row[sizes[-1]][0]
        log_growth = lengths[sizes[-1]][0] / lengths[sizes[0]][0]
        growth = f"{log_growth:.0f}x log: {last / first:.1f}x"
        print(f"{name:18s}  " + "  ".join(cells) + f"  {growth}")


if __name__ == "__main__":
    main()
