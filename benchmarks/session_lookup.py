"""Looking up one session in a store of many: the terminal UI's ``/resume ID`` check that the
session ran in another workspace (``Controller.recorded_elsewhere``) and ``dsh sessions import
--id ID``'s check that the id is free (``import_upstream``), at 10, 100 and 1,000 sessions in
the store, in both stores.

The store holds ``N`` small sessions (a header and one turn each), half of them recorded in
another workspace. Timed in CPU (``time.process_time``: the machine is shared), the best of
``--repeat``:

* ``elsewhere``: ``recorded_elsewhere`` of the newest session (one recorded elsewhere), on a
  controller of this workspace, as ``/resume`` calls it after resolving the id;
* ``import taken``: ``import_upstream`` of a one-turn TypeScript-harness log with ``--id`` of a
  stored session, refused (read, convert, the id check; nothing written);

each beside its baseline ``header``: ``store.header_of(id)``, that session's header read alone
(what one lookup costs), and their ratio. Then each figure's growth from the smallest store to
the largest, next to the store's.

Run: ``uv run python benchmarks/session_lookup.py [--sizes 10,100,1000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dsh.config import Settings
from dsh.errors import UsageError
from dsh.events import StepEnd, StepStart, TurnEnd, TurnEndReason, TurnStart
from dsh.interop import import_upstream
from dsh.store import EventStore, JsonlStore, SqliteStore
from dsh.surface import Session
from dsh.tui.controller import Controller, TuiOptions

UPSTREAM_LOG = (
    b'{"type":"session","version":0,"id":"u-1","createdAt":1767225600000}\n'
    b'{"type":"turn/start","seq":0,"time":1767225600100,"data":{"turn":1}}\n'
    b'{"type":"turn/end","seq":1,"time":1767225600200,"data":{"turn":1,'
    b'"reason":{"kind":"completed"}}}\n'
)


def cpu_best(repeat: int, work: Callable[[], object]) -> float:
    """The least CPU seconds of ``repeat`` calls of ``work``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def fill(store: EventStore, count: int, here: Path, elsewhere: Path) -> str:
    """``count`` one-turn sessions, every other one recorded ``elsewhere``; the newest's id."""
    newest = ""
    for number in range(count):
        cwd = elsewhere if number % 2 == 0 or number == count - 1 else here
        with Session.create(store, cwd=str(cwd)) as session:
            session.append(TurnStart(turn=1))
            session.append(StepStart(turn=1, step=1))
            session.append(StepEnd(turn=1, step=1))
            session.append(TurnEnd(turn=1, reason=TurnEndReason(kind="completed")))
            newest = session.id
    return newest


def measure(home: Path, store: EventStore, count: int, repeat: int) -> dict[str, float]:
    here, elsewhere = home / "here", home / "elsewhere"
    here.mkdir(parents=True)
    newest = fill(store, count, here, elsewhere)
    controller = Controller(
        TuiOptions(settings=Settings(), store=store, workspace=here),
        listener=None,  # type: ignore[arg-type]  # the check tells no listener anything
    )
    assert controller.recorded_elsewhere(newest) == str(elsewhere)
    upstream = home / "upstream.jsonl"
    upstream.write_bytes(UPSTREAM_LOG)

    def import_taken() -> None:
        try:
            import_upstream(store, home, upstream, cwd=str(here), session_id=newest)
        except UsageError:
            return
        raise AssertionError("the import of a stored id was not refused")

    return {
        "header": cpu_best(repeat, lambda: store.header_of(newest)),
        "elsewhere": cpu_best(repeat, lambda: controller.recorded_elsewhere(newest)),
        "import taken": cpu_best(repeat, import_taken),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    rows: dict[str, dict[int, tuple[float, float]]] = {}
    for size in sizes:
        for name, make in (("jsonl", JsonlStore), ("sqlite", SqliteStore)):
            with tempfile.TemporaryDirectory(prefix="dsh-session-lookup-") as tmp:
                figures = measure(Path(tmp), make(Path(tmp)), size, args.repeat)
            for figure in ("elsewhere", "import taken"):
                row = rows.setdefault(f"{name} {figure}", {})
                row[size] = (figures[figure], figures["header"])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"CPU ms, best of {args.repeat}; load average {load}; sessions in the store: {sizes}")
    for name, row in rows.items():
        cells = [
            f"{size:,}: {t * 1e3:.3f} (header {b * 1e3:.3f}) {t / b:.1f}x"
            for size, (t, b) in row.items()
        ]
        first, last = row[sizes[0]][0], row[sizes[-1]][0]
        growth = f"{sizes[-1] / sizes[0]:.0f}x sessions: {last / first:.1f}x"
        print(f"{name:20s}  " + "  ".join(cells) + f"  {growth}")


if __name__ == "__main__":
    sys.exit(main())
