"""Live latency for a session another process writes: append (in a second process) -> DOM.

For sessions of ``--sizes`` events (default 200 and 20,000; built as in ``benchmarks/web.py``)
``dsh web`` serves the session without opening it; a page watches it; a second Python process
opens the session for writing (taking the writer lock) and appends ``--live`` (default 100)
user messages 20 ms apart, recording the wall time just before each ``Session.append``. The
page records the wall time each row with that seq entered the DOM (a MutationObserver).
Baseline, measured in the same run on the same session: the web process itself resumes the
session and appends on its own loop (the path every local writer takes). Median, p95, max and
the ratio of the medians. Target: other-process median <= 100 ms (PASS/MISS; a miss never makes
the exit status non-zero).

Run: ``uv run python benchmarks/web_follow.py [--sizes 200,20000] [--live N] [--json]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from dsh.agent.runtime import Route
from dsh.config import Settings
from dsh.events import Message, TextBlock, UserSource
from dsh.llm.scripted import ScriptedProvider
from dsh.store import JsonlStore
from dsh.web import BackgroundServer, SessionRegistry, WebRuntime, create_app
from web import CHROMIUM, CHROMIUM_ARGS, TOKEN, build_session

TARGET_MS = 100.0

WRITER = """
import json, sys, time
from pathlib import Path
from dsh.events import Message, TextBlock, UserSource
from dsh.store import JsonlStore
from dsh.surface import Session
home, session_id, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
session = Session.open(JsonlStore(Path(home)), session_id, writable=True)
print("ready", flush=True)
sys.stdin.readline()
appended = {}
for i in range(count):
    message = Message(id=f"other-{i}", role="user", content=(TextBlock(text=f"other {i}"),),
                      source=UserSource())
    before = time.time() * 1000
    appended[session.append(message).seq] = before
    time.sleep(0.02)
session.close()
print(json.dumps(appended), flush=True)
"""

OBSERVE = """() => {
    window.arrivals = {};
    new MutationObserver((records) => {
        const now = performance.timeOrigin + performance.now();
        for (const r of records) for (const n of r.addedNodes) {
            if (n.dataset && n.dataset.seq) window.arrivals[n.dataset.seq] = now;
        }
    }).observe(document.getElementById('log'), { childList: true, subtree: true });
}"""


def summary(appended: dict[int, float], arrivals: dict[str, float]) -> dict[str, Any]:
    latencies = sorted(arrivals[str(seq)] - at for seq, at in appended.items())
    return {
        "median_ms": statistics.median(latencies),
        "p95_ms": latencies[max(0, int(len(latencies) * 0.95) - 1)],
        "max_ms": latencies[-1],
        "events": len(latencies),
    }


def watch(browser: Any, url: str) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url)
    page.wait_for_function(
        "() => performance.getEntriesByName('dsh:first-page-painted').length > 0 && "
        "window.dsh.socket && window.dsh.socket.readyState === 1",
        timeout=60_000,
    )
    page.evaluate(OBSERVE)
    return context, page


def other_process(browser: Any, url: str, home: Path, session_id: str, count: int) -> Any:
    context, page = watch(browser, url)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(home), session_id, str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None and writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready"
    writer.stdin.write("go\n")
    writer.stdin.flush()
    appended = {int(k): v for k, v in json.loads(writer.stdout.readline()).items()}
    writer.wait()
    page.wait_for_function(f"() => Object.keys(window.arrivals).length >= {count}", timeout=120_000)
    arrivals = page.evaluate("() => window.arrivals")
    context.close()
    return summary(appended, arrivals)


def same_process(
    browser: Any, server: BackgroundServer, registry: SessionRegistry, session_id: str,
    url: str, count: int,
) -> Any:  # fmt: skip
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {TOKEN}"}) as h:
        h.post(f"/api/sessions/{session_id}/resume").raise_for_status()
        context, page = watch(browser, url)
        session = registry.handles[session_id].session
        appended: dict[int, float] = {}

        def append(i: int) -> None:
            message = Message(
                id=f"here-{i}", role="user", content=(TextBlock(text=f"here {i}"),),
                source=UserSource(),
            )  # fmt: skip
            before = time.time() * 1000
            appended[session.append(message).seq] = before

        for i in range(count):
            server.call(append, i)
            time.sleep(0.02)
        page.wait_for_function(
            f"() => Object.keys(window.arrivals).length >= {count}", timeout=60_000
        )
        arrivals = page.evaluate("() => window.arrivals")
        context.close()
        h.post(f"/api/sessions/{session_id}/close").raise_for_status()
    return summary(appended, arrivals)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="200,20000")
    parser.add_argument("--live", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"web follow benchmark: needs {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="dsh-web-follow-") as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for size in (int(s) for s in args.sizes.split(",")):
            root = Path(tmp) / str(size)
            store = JsonlStore(root / "home")
            session_id, _, _ = build_session(store, root, size, 7)
            runtime = WebRuntime(Settings(), Route(ScriptedProvider([]), "scripted", 128_000))
            registry = SessionRegistry(store, runtime, default_cwd=root)
            with BackgroundServer(create_app(registry, token=TOKEN)) as server:
                url = f"{server.base_url}/?token={TOKEN}#s={session_id}"
                here = same_process(browser, server, registry, session_id, url, args.live)
                other = other_process(browser, url, store.home, session_id, args.live)
            results.append({"events": size, "same_process": here, "other_process": other})
        browser.close()
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print("web follow benchmark: append -> DOM latency, a page watching the session")
    for r in results:
        here, other = r["same_process"], r["other_process"]
        verdict = "PASS" if other["median_ms"] <= TARGET_MS else "MISS"
        print(
            f"  {r['events']} events: other process median {other['median_ms']:.1f} ms, p95 "
            f"{other['p95_ms']:.1f}, max {other['max_ms']:.1f} ({other['events']} events); "
            f"baseline same process median {here['median_ms']:.1f} ms, p95 {here['p95_ms']:.1f}; "
            f"ratio {other['median_ms'] / here['median_ms']:.1f}x  target <= {TARGET_MS:.0f} ms "
            f"{verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
