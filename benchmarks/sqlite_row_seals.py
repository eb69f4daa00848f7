"""What checking SQLite rows' CRC seals costs a load, against the same rows without seals, in
the same run.

A session of about ``1 + 6 x --turns`` events (chat and tool turns) is written to a SQLite
store under a temporary home. Timed, each best of ``--repeat``:

- sealed: ``store.open`` of the session as this version writes it (every row's seal checked);
- unsealed: the same session after its rows' seals are stripped in place (what a version before
  seals stored and read: the baseline);
- the ratio sealed / unsealed.

Run: ``uv run python benchmarks/sqlite_row_seals.py [--turns 20000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.helpers import append_chat_turn, append_tool_turn, new_session

from dsh.store import SqliteStore
from dsh.store.integrity import unseal


def best(repeat: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dsh-bench-seals-") as home:
        store = SqliteStore(Path(home))
        session = new_session(store)
        for turn in range(args.turns):
            if turn % 2:
                append_tool_turn(session)
            else:
                append_chat_turn(session, f"prompt {turn}", f"reply {turn}")
        session.close()
        events = len(session.events)
        size = os.path.getsize(store.path)

        def load() -> None:
            store.open(session.id).close()

        sealed = best(args.repeat, load)
        with sqlite3.connect(store.path) as db:
            rows = db.execute("SELECT seq, body FROM events WHERE session_id = ?", (session.id,))
            stripped = [(unseal(bytes(body))[0], session.id, seq) for seq, body in rows]
            db.executemany("UPDATE events SET body = ? WHERE session_id = ? AND seq = ?", stripped)
        unsealed = best(args.repeat, load)
    print(f"session: {events:,} events, database {size / 1e6:.1f} MB; best of {args.repeat}")
    print(f"load, rows unsealed (baseline)  {unsealed * 1000:9.1f} ms")
    print(f"load, seals checked             {sealed * 1000:9.1f} ms")
    print(f"ratio sealed / unsealed         {sealed / unsealed:9.2f}x")


if __name__ == "__main__":
    main()
