"""Find in ``dsh web`` on a long session: reaching an early match, and the server's search.

Builds the web benchmarks' session (``_web_session.build_session``: turns of 1-3 steps, Markdown
replies, ``read_file`` results of 0.3-3 KB, a manual ``/compact`` every 250 turns) of
``--events`` events (default 100,000), serves it with ``dsh web`` and drives Debian's
``/usr/bin/chromium`` with Playwright.

Measured:

* reaching an early match (the user message of turn ``--turn``, default 3, near the log's
  start) from a page opened on the session's newest page, until the match's row is in the view
  and painted (a ``requestAnimationFrame`` after it):

  - before (the same-run baseline, what find did before): older history pages of 50 messages
    loaded one after another until the match's row exists (``Paging.loadOlder``, as the old
    ``loadUntil`` did);
  - now: ``Paging.loadUntil``, a jump: one window of the log around the match
    (``GET …/history?around_seq=``) in place of the view;

  median of ``--repeat`` runs each (default 3), each in a freshly opened page; and the ratio;
* the server's find (``GET …/find?q=``, timed in the process, the log already read): before,
  ``find_in_transcript`` over the whole log, as every query ran it; now, a ``FindIndex``'s
  first query (it folds the log), a later one (the index kept), and one after 10 events were
  appended (folded in, not the whole log again). Best of ``--repeat``.

Run: ``uv run python benchmarks/web_find.py [--events N] [--turn T] [--repeat N] [--json]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _timing import best_of
from _web_session import build_session
from dsh.agent.runtime import Route
from dsh.config import Settings
from dsh.events import Message, TextBlock, UserSource
from dsh.llm.scripted import ScriptedProvider
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.transcript.find import find_in_transcript
from dsh.transcript.find_index import FindIndex
from dsh.web import BackgroundServer, SessionRegistry, WebRuntime, create_app

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
TOKEN = "benchmark-token-0123456789abcdef"

REACH = """async ([seq, jump]) => {
    const s = window.dsh;
    const painted = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
    const start = performance.now();
    if (jump) {
        await s.paging.loadUntil(seq);
    } else {
        while (s.hasMore && s.oldestSeq > seq) {
            const before = s.oldestSeq;
            await s.paging.loadOlder();
            if (s.oldestSeq === before) break;
        }
    }
    const row = s.view.rows.get(seq);
    if (!row) throw new Error('the match is not in the view');
    s.view.reveal(row);
    await painted();
    return [performance.now() - start, s.view.order.length];
}"""


def reach(browser: Any, url: str, seq: int, jump: bool) -> tuple[float, int]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(url)
        page.wait_for_function(
            "() => window.dsh.info && window.dsh.view && !window.dsh.loadingOlder"
        )
        ms, rows = page.evaluate(REACH, [seq, jump])
        return float(ms), int(rows)
    finally:
        page.close()


def measure_reach(browser: Any, url: str, seq: int, repeat: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for name, jump in (("before", False), ("now", True)):
        runs = [reach(browser, url, seq, jump) for _ in range(repeat)]
        figures[name] = {
            "median_ms": statistics.median(ms for ms, _ in runs),
            "all_ms": [round(ms, 1) for ms, _ in runs],
            "rows": runs[0][1],
        }
    figures["ratio"] = figures["before"]["median_ms"] / figures["now"]["median_ms"]
    return figures


def measure_search(store: JsonlStore, session_id: str, query: str, repeat: int) -> dict[str, Any]:
    session = Session.open(store, session_id, writable=True)
    try:
        events = [*session.events]
        index = FindIndex()
        fresh = best_of(repeat, lambda: find_in_transcript(events, query, limit=1001))
        start = time.perf_counter()
        index.find(events, query, limit=1001)
        first = time.perf_counter() - start
        kept = best_of(repeat, lambda: index.find(events, query, limit=1001))
        for i in range(10):
            text = TextBlock(text=f"appended {i}")
            session.append(
                Message(id=f"bench-{i}", role="user", content=(text,), source=UserSource())
            )
        grown = [*session.events]
        start = time.perf_counter()
        found = index.find(grown, query, limit=1001)
        appended = time.perf_counter() - start
        assert found == find_in_transcript(grown, query, limit=1001)
    finally:
        session.close()
    return {
        "before_ms": fresh * 1000,
        "first_query_ms": first * 1000,
        "later_query_ms": kept * 1000,
        "after_append_ms": appended * 1000,
        "ratio": fresh / kept,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--turn", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"web find benchmark: needs {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="dsh-web-find-") as tmp:
        root = Path(tmp)
        store = JsonlStore(root / "home")
        session_id, turns, _ = build_session(store, root, args.events, args.seed)
        query = f"Turn {args.turn}:"
        hits = find_in_transcript(Session.open(store, session_id).events, query)
        seq = hits[0].seq
        runtime = WebRuntime(Settings(), Route(ScriptedProvider([]), "scripted", 128_000))
        registry = SessionRegistry(store, runtime, default_cwd=root)
        with BackgroundServer(create_app(registry, token=TOKEN)) as server, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            url = f"{server.base_url}/?token={TOKEN}#s={session_id}"
            reached = measure_reach(browser, url, seq, args.repeat)
            browser.close()
        search = measure_search(store, session_id, query, args.repeat)
    results = {
        "session": {"events": args.events, "turns": turns, "match_seq": seq},
        "reach": reached,
        "search": search,
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"session: {args.events} events, {turns} turns; the match: {query!r} at seq {seq}")
    before, now = reached["before"], reached["now"]
    print(
        f"reach an early match: before {before['median_ms']:.0f} ms ({before['rows']} rows "
        f"in the view), now {now['median_ms']:.0f} ms ({now['rows']} rows), "
        f"{reached['ratio']:.0f}x faster"
    )
    print(
        f"server find: before {search['before_ms']:.1f} ms per query; now first "
        f"{search['first_query_ms']:.1f} ms, later {search['later_query_ms']:.1f} ms "
        f"({search['ratio']:.0f}x faster), after 10 appended events "
        f"{search['after_append_ms']:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
