"""The web's session list (``GET /api/sessions``: each row's title, last activity and writer)
against the way it read titles before, in the same run.

A JSONL store holds one long session of about ``--events`` events (``scaling.py``'s prefill)
and ``--sessions`` - 1 short ones of ``--turns`` chat turns. Both ways annotate the same rows:

- before (the baseline): each log's title read by scanning its whole file for the lines that
  can title it (``session/title`` and the first prompt, told by their prefix), the answer kept
  while the file's size and mtime stay put (the code before the summary cache, kept here);
- now: ``SessionIndex.annotate``, the summaries ``dsh sessions list`` keeps in the summary cache,
  each log read on from the position it covers (``dsh.store.appended``).

Timed, each the median of ``--repeat`` runs (or of half as many, at least 3):

- first listing: before, no titles known; now, no cache file (every log read once, whole);
- after a restart: a new server's first listing; before, no titles known again; now, the
  cache file kept (``dsh sessions list`` and the TUI's picker keep the same one);
- repeat, recent: unchanged logs all written in the last two seconds (now: each file opened
  and its last line compared, since file times are coarse);
- repeat, settled: the same once the logs' mtimes are an hour old (a stat per log);
- after one turn: one more turn appended to the long session (untimed), then a listing: what
  the page asks after every turn (a ``status`` frame reloads the list).

Printed: the long log's size, the load average before and after, each figure in ms beside its
baseline and the ratio, and ``store.list()`` alone (any listing's floor). Reported, never an
error exit on timings (a title that differs between the two ways is an error exit).

Run: ``uv run python benchmarks/web_list.py [--events 100000] [--sessions 20] [--turns 20]
[--repeat 7]``
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.helpers import append_chat_turn

from context_report import load_average, median_ms
from dsh.errors import DshError
from dsh.events import Event, UserMessageEvent, UserSource, decode_event_line
from dsh.store import JsonlStore
from dsh.store.derived import summary_cache_path
from dsh.store.integrity import check_line
from dsh.surface import Session
from dsh.transcript.titles import session_title
from dsh.web.follow import lock_holder
from dsh.web.titles import SIDEBAR_TITLE_CHARS, SessionIndex
from scaling import _turn, prefill

_TITLE_LINE = b'{"type":"session/title"'
_PROMPT_LINE = b'{"type":"user/message"'


class WholeFileTitles:
    """The session list's titles as they were read before the summary cache: a changed log is
    scanned whole for the lines that can title it."""

    def __init__(self, store: JsonlStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._titles: dict[str, tuple[tuple[int, int] | None, str | None]] = {}

    def annotate(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for row in rows:
            session_id = row["id"]
            stamp = self._stamp(session_id)
            row["title"] = self.title(session_id, stamp)
            row["lastActive"] = stamp[1] // 1_000_000 if stamp is not None else None
            row["heldBy"] = None if row.get("open") else lock_holder(self.store, session_id)
        return rows

    def title(self, session_id: str, stamp: tuple[int, int] | None) -> str | None:
        with self._lock:
            known = self._titles.get(session_id)
        if known is not None and known[0] == stamp:
            return known[1]
        try:
            title = session_title(self._events(session_id), SIDEBAR_TITLE_CHARS)
        except DshError:
            title = None
        with self._lock:
            self._titles[session_id] = (stamp, title)
        return title

    def _stamp(self, session_id: str) -> tuple[int, int] | None:
        try:
            stat = self.store.log_path(session_id).stat()
        except OSError:
            return None
        return stat.st_size, stat.st_mtime_ns

    def _events(self, session_id: str) -> Iterator[Event]:
        path = self.store.log_path(session_id)
        with path.open("rb") as handle:
            handle.readline()
            prompted = False
            for number, raw in enumerate(handle, start=2):
                if not raw.endswith(b"\n"):
                    return
                prompt = not prompted and raw.startswith(_PROMPT_LINE)
                if not prompt and not raw.startswith(_TITLE_LINE):
                    continue
                canonical = check_line(raw[:-1], number=number, where=f"{path}: ")
                event = decode_event_line(canonical, line=number)
                prompted = prompted or (
                    isinstance(event, UserMessageEvent)
                    and event.surface_op == "append"
                    and isinstance(event.data.source, UserSource)
                )
                yield event


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"load average: {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        store = JsonlStore(root / "home")
        long_id, turns = prefill(store, root / "ws", args.events)
        for n in range(args.sessions - 1):
            with Session.create(store, cwd=root / "ws") as short:
                for turn in range(args.turns):
                    append_chat_turn(short, f"session {n} prompt {turn}", "ok")
        headers = store.list()
        cache = summary_cache_path(store.home, "jsonl")
        size = store.log_path(long_id).stat().st_size
        print(
            f"{len(headers)} sessions; the long one {args.events:,} events ({size / 1e6:.1f} MB), "
            f"the others {args.turns} turns each"
        )

        def rows() -> list[dict[str, Any]]:
            return [{"id": h.id, "open": False} for h in headers]

        def before_cold() -> Callable[[], object]:
            index = WholeFileTitles(store)
            return lambda: index.annotate(rows())

        def now_cold() -> Callable[[], object]:
            cache.unlink(missing_ok=True)
            index = SessionIndex(store)
            return lambda: index.annotate(rows(), headers)

        figures: dict[str, tuple[float, float]] = {}
        pending: list[Callable[[], object]] = []

        def cold(make: Callable[[], Callable[[], object]]) -> float:
            return median_ms(
                max(3, args.repeat // 2),
                lambda: pending[-1](),
                before=lambda: pending.append(make()),
            )

        figures["first listing"] = (cold(before_cold), cold(now_cold))

        def now_restarted() -> Callable[[], object]:
            index = SessionIndex(store)  # a new server: only the cache file is kept
            return lambda: index.annotate(rows(), headers)

        figures["after a restart"] = (cold(before_cold), cold(now_restarted))
        old, new = WholeFileTitles(store), SessionIndex(store)
        old.annotate(rows())
        new.annotate(rows(), headers)
        figures["repeat, recent"] = (
            median_ms(args.repeat, lambda: old.annotate(rows())),
            median_ms(args.repeat, lambda: new.annotate(rows(), headers)),
        )
        hour_ago = time.time_ns() - 3_600 * 10**9
        for header in headers:  # most logs were last written long before a listing
            os.utime(store.log_path(header.id), ns=(hour_ago, hour_ago))
        old.annotate(rows())
        new.annotate(rows(), headers)
        figures["repeat, settled"] = (
            median_ms(args.repeat, lambda: old.annotate(rows())),
            median_ms(args.repeat, lambda: new.annotate(rows(), headers)),
        )
        rng = random.Random(3)
        appended = iter(range(turns + 1, turns + 1 + 2 * args.repeat))

        def one_turn() -> None:
            with Session.open(store, long_id, writable=True) as writer:
                writer.append_many(_turn(next(appended), rng))

        figures["after one turn"] = (
            median_ms(args.repeat, lambda: old.annotate(rows()), before=one_turn),
            median_ms(args.repeat, lambda: new.annotate(rows(), headers), before=one_turn),
        )
        titled_before = [row["title"] for row in old.annotate(rows())]
        titled_now = [row["title"] for row in new.annotate(rows(), headers)]
        if titled_before != titled_now:
            raise SystemExit("the two ways' titles differ")
        floor = median_ms(args.repeat, store.list)
    print(f"{'figure':16s}{'before':>14s}{'now':>14s}{'ratio':>10s}")
    for name, (base, value) in figures.items():
        print(f"{name:16s}{base:11.3f} ms{value:11.3f} ms{value / base:9.3f}x")
    print(f"store.list() alone (any listing's floor): {floor:.3f} ms")
    print("ratio: now / before, the same listing in the same run")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
