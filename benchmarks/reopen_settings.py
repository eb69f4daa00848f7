"""Reopen cost of reading a session's recorded settings (``dsh.agent.session_settings``).

``dsh run --session`` and ``dsh --resume`` read the recorded settings before they resolve the
route (so a bad route creates no lock): the JSONL log's last ``session/settings`` line, found
through its settings record (``JsonlStore.latest_settings``, ``dsh.store.settings_record``; a
full read-only load was 1.8x the open, a raw search backwards from the log's end grew with the
distance to that line), then the writable open they did before. The TUI, the web and ``dsh
compact`` read them from the session they already hold (the per-type index: no scan). Measured
here, best of 3, on one realistic JSONL session:

* baseline: ``Session.open(store, id, writable=True)`` + close (what a resume did before);
* with settings: ``read`` + ``effective`` + the same writable open;
* ``latest`` on the open session (what the other faces pay).

Run: ``uv run python benchmarks/reopen_settings.py [--events N] [--seed S]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import best_of
from dsh.agent import session_settings
from dsh.config import Settings
from dsh.store import JsonlStore
from dsh.surface import Session
from log_replay import build  # type: ignore[import-not-found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        session, _ = build(home, args.events, args.seed)
        settings = Settings()
        session_settings.record(
            session, session_settings.snapshot(settings, "deepseek", "deepseek-chat", None, tmp)
        )
        session_id, count = session.id, len(session.events)
        session.close()
        store = JsonlStore(home)

        def before() -> None:
            Session.open(store, session_id, writable=True).close()

        def after() -> None:
            recorded = session_settings.read(store, session_id)
            session_settings.effective(settings, recorded)
            Session.open(store, session_id, writable=True).close()

        baseline, with_settings = best_of(3, before), best_of(3, after)
        with Session.open(store, session_id) as opened:
            latest = best_of(3, lambda: session_settings.latest(opened))
    print(f"session: {count} events")
    print(f"resume open, baseline:          {baseline * 1000:8.1f} ms")
    print(
        f"resume open, with settings:     {with_settings * 1000:8.1f} ms "
        f"(ratio {with_settings / baseline:.2f}x)"
    )
    print(f"latest() on an open session:    {latest * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
