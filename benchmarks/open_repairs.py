"""Cost of the clean-up after a killed undo that every open for writing runs
(``dsh.agent.undo_recovery.recover_at_open``, registered with ``dsh.surface.repair_on_open``).

Measured on one realistic JSONL session (``log_replay.build``) holding ``--undos`` answered
undos (``command/run`` + ``command/done``), best of ``--runs``:

* ``Session.open(store, id, writable=True)`` + close without the repair, and with it;
* the repair alone on an open session with nothing to clean up (what each open adds: it reads
  the session's ``command/run`` and ``command/done`` events from the per-type index, no scan);
* for scale, the full scan (``scan_log``) the repair runs only when an undo is unanswered.

Run: ``uv run python benchmarks/open_repairs.py [--events N] [--undos U] [--runs R]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import dsh.surface.session as surface_session
from _timing import best_of
from dsh.agent.undo_recovery import recover_at_open
from dsh.agent.undo_scan import scan_log
from dsh.events import CommandDone, CommandRun
from dsh.store import JsonlStore
from dsh.surface import Session
from log_replay import build  # type: ignore[import-not-found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--undos", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        session, _ = build(home, args.events, args.seed)
        for n in range(args.undos):
            command_id = f"cmd-{n:08x}"
            session.append(CommandRun(command_id=command_id, name="undo", args=""))
            session.append(CommandDone(command_id=command_id, ok=False, text="refused"))
        session.sync()
        session_id, count = session.id, len(session.events)
        session.close()
        store = JsonlStore(home)

        def open_close() -> None:
            Session.open(store, session_id, writable=True).close()

        assert recover_at_open in surface_session._open_repairs
        with_repair = best_of(args.runs, open_close)
        surface_session._open_repairs.remove(recover_at_open)
        try:
            without = best_of(args.runs, open_close)
        finally:
            surface_session.repair_on_open(recover_at_open)
        with Session.open(store, session_id, writable=True) as opened:
            assert opened.warnings == []
            alone = best_of(args.runs * 20, lambda: recover_at_open(opened))
            scan = best_of(args.runs, lambda: scan_log(opened.events))
    print(f"session: {count} events, {args.undos} answered undos")
    print(f"writable open + close, without the repair: {without * 1000:8.1f} ms")
    print(f"writable open + close, with the repair:    {with_repair * 1000:8.1f} ms")
    print(f"the repair alone, nothing to clean up:     {alone * 1e6:8.1f} us")
    print(f"scan_log (only with an unanswered undo):   {scan * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
