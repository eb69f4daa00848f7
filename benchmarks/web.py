"""Web client benchmark: a 20,000-event session in ``dsh web``, in headless chromium.

Builds a JSONL session of ``--events`` events (default 20,000) straight through ``Session``:
turns of 1-3 steps, assistant replies in Markdown with a fenced code block, 0-2 ``read_file``
calls per step with 0.3-3 KB results, and a manual ``/compact`` every 250 turns written the way
the engine writes one (command/run, compaction/start → summary → checkpoint replace → end,
command/done with ``sourceEventSeq``). Then serves it with ``dsh web`` (uvicorn, in a thread,
keyless scripted runtime) and drives Debian's ``/usr/bin/chromium`` with Playwright.

Measured:

* first contentful render of the last page: a fresh browser context opens the session's URL
  (the session is not open for writing, so the server reads it from the store per request);
  the time is the page's own ``dsh:first-page-painted`` mark (first history page rendered, and
  the next animation frame), in ms since navigation start. Median of ``--loads`` loads
  (default 5); the shell's first-contentful-paint is shown for reference;
* bytes sent for the first page: the ``GET …/history`` response body as the browser received
  it (``Content-Encoding: gzip``; the uncompressed size is shown too), and its message/event
  counts;
* live latency: the session is resumed, a page watches it, and the server appends ``--live``
  (default 200) user messages 20 ms apart on its own loop; latency = wall time when the row
  with that seq entered the DOM (``performance.timeOrigin + performance.now()`` in a
  MutationObserver) minus wall time just before ``Session.append``. Median, p95, max.

Targets (PASS/MISS; a miss never makes the exit status non-zero): first render <= 1.5 s,
first page <= 300 KB, live latency median <= 100 ms.

Run: ``uv run python benchmarks/web.py [--events N] [--loads N] [--live N] [--seed S] [--json]``
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from dsh.agent.runtime import Route
from dsh.config import Settings
from dsh.events import (
    AssistantMessage,
    CommandDone,
    CommandRun,
    CompactionEnd,
    CompactionStart,
    CompactionSummary,
    Message,
    ModelSource,
    PluginSource,
    ReplaceOp,
    StepEnd,
    StepStart,
    TextBlock,
    ToolCall,
    ToolCallBlock,
    ToolResult,
    ToolResultBlock,
    ToolSource,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    Usage,
    UserSource,
)
from dsh.llm.scripted import ScriptedProvider
from dsh.store import JsonlStore
from dsh.surface import Session
from dsh.web import BackgroundServer, SessionRegistry, WebRuntime, create_app

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TOKEN = "benchmark-token-0123456789abcdef"
MODEL = ModelSource(provider="scripted", model="scripted")
COMPACT_EVERY = 250
TARGET_RENDER_MS = 1500.0
TARGET_PAGE_BYTES = 300 * 1024
TARGET_LATENCY_MS = 100.0
WORDS = [
    "parser",
    "config",
    "cache",
    "retry",
    "handler",
    "module",
    "test",
    "fixture",
    "session",
    "buffer",
    "index",
    "token",
    "window",
    "event",
    "stream",
    "worker",
    "queue",
    "schema",
    "migrate",
    "import",
    "export",
    "render",
]


# ---- the session ----------------------------------------------------------------------------


def _prose(rnd: random.Random, words: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(words))


def build_session(store: JsonlStore, cwd: Path, events: int, seed: int) -> tuple[str, int, int]:
    """Append turns until the log holds ``events`` events; returns (id, turns, compactions)."""
    rnd = random.Random(seed)
    session = Session.create(store, cwd=cwd)
    turn = compactions = 0
    first_unshadowed = 0  # surface position after the latest checkpoint
    while len(session.events) < events:
        turn += 1
        session.append(TurnStart(turn=turn))
        steps = rnd.randint(1, 3)
        for step in range(1, steps + 1):
            session.append(StepStart(turn=turn, step=step))
            if step == 1:
                text = f"Turn {turn}: {_prose(rnd, rnd.randint(8, 40))}"
                session.append(
                    Message(
                        id=f"u-{turn}",
                        role="user",
                        content=(TextBlock(text=text),),
                        source=UserSource(),
                    )
                )
            last = step == steps
            calls = (
                ()
                if last
                else tuple(
                    ToolCallBlock(
                        id=f"call-{turn}-{step}-{i}",
                        name="read_file",
                        arguments=json.dumps({"path": f"src/{rnd.choice(WORDS)}_{i}.py"}),
                    )
                    for i in range(rnd.randint(1, 2))
                )
            )
            code = f"```python\ndef {rnd.choice(WORDS)}():\n    return {turn}\n```"
            reply = f"{_prose(rnd, rnd.randint(10, 50))}\n\n{code}"
            usage = Usage(
                input_tokens=rnd.randint(100, 900),
                output_tokens=rnd.randint(20, 200),
                cache_read_tokens=rnd.randint(1000, 9000),
            )
            session.append(
                AssistantMessage(
                    turn=turn,
                    step=step,
                    usage=usage,
                    message=Message(
                        id=f"a-{turn}-{step}",
                        role="assistant",
                        content=(TextBlock(text=reply), *calls),
                        source=MODEL,
                    ),
                )
            )
            call_seqs = [
                session.append(
                    ToolCall(turn=turn, step=step, call_id=c.id, name=c.name, arguments=c.arguments)
                ).seq
                for c in calls
            ]
            for call, call_seq in zip(calls, call_seqs, strict=True):
                size = rnd.randint(300, 3000)
                lines, total = [], 0
                while total < size:
                    line = f"{len(lines) + 1}\t{_prose(rnd, 8)}"
                    lines.append(line)
                    total += len(line) + 1
                body = Message(
                    id=f"r-{call.id}",
                    role="tool",
                    content=(
                        ToolResultBlock(
                            tool_call_id=call.id, content=(TextBlock(text="\n".join(lines)),)
                        ),
                    ),
                    source=ToolSource(call_id=call.id),
                )
                session.append(
                    ToolResult(turn=turn, step=step, message=body), source_event_seqs=[call_seq]
                )
            session.append(StepEnd(turn=turn, step=step))
        session.append(TurnEnd(turn=turn, reason=TurnEndReason(kind="completed")))
        if turn % COMPACT_EVERY == 0:
            first_unshadowed = _compact(session, turn, first_unshadowed)
            compactions += 1
    session.close()
    return session.id, turn, compactions


def _compact(session: Session, turn: int, first: int) -> int:
    """A manual /compact of the surface after the previous checkpoint, up to the last turn."""
    nodes = session.nodes[first:]
    shadowed = tuple(nodes)
    command = f"cmd-{turn}"
    pass_id = f"pass-{turn}"
    session.append(CommandRun(command_id=command, name="compact", args=""))
    start = session.append(
        CompactionStart(
            compaction_id=f"{pass_id}-1", pass_id=pass_id, turn=None, source_command_id=command
        )
    ).seq
    tokens = sum(session.node_tokens(seq) for seq in shadowed)
    text = f"## Goal\n- keep going (turn {turn})\n\n## Current state\n- {len(shadowed)} items"
    summary = session.append(
        CompactionSummary(
            compaction_id=f"{pass_id}-1",
            pass_id=pass_id,
            kind="state",
            summary=text,
            shadowed_range=(shadowed[0], shadowed[-1]),
            shadowed_seqs=shadowed,
            shadowed_token_count=tokens,
            provider="extractive",
            model="extractive",
        )
    ).seq
    checkpoint = Message(
        id=f"checkpoint-{pass_id}-1",
        role="user",
        content=(TextBlock(text=text),),
        source=PluginSource(
            plugin="compact", compaction_id=f"{pass_id}-1", source_command_id=command
        ),
    )
    session.append(
        checkpoint,
        surface_op=ReplaceOp(start=shadowed[0], end=shadowed[-1]),
        source_event_seqs=[start, summary, *shadowed],
    )
    session.append(CompactionEnd(compaction_id=f"{pass_id}-1", pass_id=pass_id, turn=None))
    session.append(
        CommandDone(
            command_id=command,
            ok=True,
            source_event_seq=summary,
            text=f"Compacted {len(shadowed)} history items (~{tokens} tokens)",
        )
    )
    return first + 1  # the checkpoint now sits where the span was


# ---- measurements ---------------------------------------------------------------------------


def measure_first_render(browser: Any, url: str, loads: int) -> dict[str, Any]:
    renders, paints, bodies = [], [], []
    for _ in range(loads):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        pages: list[Any] = []

        def keep(response: Any, into: list[Any] = pages) -> None:
            if "/history" in response.url:
                into.append(response)

        page.on("response", keep)
        page.goto(url)
        page.wait_for_function(
            "() => performance.getEntriesByName('dsh:first-page-painted').length > 0",
            timeout=30_000,
        )
        renders.append(
            page.evaluate(
                "() => performance.getEntriesByName('dsh:first-page-painted')[0].startTime"
            )
        )
        paints.append(
            page.evaluate(
                "() => (performance.getEntriesByName('first-contentful-paint')[0]"
                " || {}).startTime || null"
            )
        )
        rows = page.evaluate("() => document.querySelectorAll('#log > .row').length")
        first = pages[0]
        sizes = first.request.sizes()
        body = first.body()
        bodies.append(
            {
                "wire": sizes["responseBodySize"],
                "uncompressed": len(body),
                "encoding": first.headers.get("content-encoding", "identity"),
                "events": len(json.loads(body)["events"]),
                "rows": rows,
            }
        )
        context.close()
    page_info = bodies[0]
    page_info["messages"] = None
    return {
        "render_ms": statistics.median(renders),
        "render_all_ms": renders,
        "fcp_ms": statistics.median([p for p in paints if p is not None] or [0]),
        "page": page_info,
    }


def measure_live(
    browser: Any,
    server: BackgroundServer,
    registry: SessionRegistry,
    session_id: str,
    url: str,
    count: int,
) -> dict[str, Any]:
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {TOKEN}"}) as h:
        response = h.post(f"/api/sessions/{session_id}/resume")
        response.raise_for_status()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url)
    page.wait_for_function(
        "() => performance.getEntriesByName('dsh:first-page-painted').length > 0 && "
        "window.dsh.socket && window.dsh.socket.readyState === 1",
        timeout=30_000,
    )
    page.evaluate(
        """() => {
            window.arrivals = {};
            new MutationObserver((records) => {
                const now = performance.timeOrigin + performance.now();
                for (const r of records) for (const n of r.addedNodes) {
                    if (n.dataset && n.dataset.seq) window.arrivals[n.dataset.seq] = now;
                }
            }).observe(document.getElementById('log'), { childList: true });
        }"""
    )
    session = registry.handles[session_id].session
    appended: dict[int, float] = {}

    def append(i: int) -> None:
        message = Message(
            id=f"live-{i}",
            role="user",
            content=(TextBlock(text=f"live message {i}"),),
            source=UserSource(),
        )
        before = time.time() * 1000
        appended[session.append(message).seq] = before

    for i in range(count):
        server.call(append, i)
        time.sleep(0.02)
    page.wait_for_function(f"() => Object.keys(window.arrivals).length >= {count}", timeout=30_000)
    arrivals = page.evaluate("() => window.arrivals")
    context.close()
    latencies = sorted(arrivals[str(seq)] - at for seq, at in appended.items())
    return {
        "median_ms": statistics.median(latencies),
        "p95_ms": latencies[int(len(latencies) * 0.95) - 1],
        "max_ms": latencies[-1],
        "events": len(latencies),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--live", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"web benchmark: needs {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="dsh-web-bench-") as tmp:
        root = Path(tmp)
        store = JsonlStore(root / "home")
        started = time.perf_counter()
        session_id, turns, compactions = build_session(store, root, args.events, args.seed)
        built_s = time.perf_counter() - started
        size = store.log_path(session_id).stat().st_size
        runtime = WebRuntime(Settings(), Route(ScriptedProvider([]), "scripted", 128_000))
        registry = SessionRegistry(store, runtime, default_cwd=root)
        app = create_app(registry, token=TOKEN)
        with BackgroundServer(app) as server, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            url = f"{server.base_url}/?token={TOKEN}#s={session_id}"
            first = measure_first_render(browser, url, args.loads)
            with httpx.Client(
                base_url=server.base_url, headers={"Authorization": f"Bearer {TOKEN}"}
            ) as h:
                page = h.get(f"/api/sessions/{session_id}/history").json()
            messages = sum(
                e["type"] in ("user/message", "assistant/message")
                and e.get("surfaceOp") == "append"
                for e in page["events"]
            )
            first["page"]["messages"] = messages
            live = measure_live(browser, server, registry, session_id, url, args.live)
            browser.close()

    def verdict(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    page_info = first["page"]
    results = {
        "session": {
            "events": args.events,
            "turns": turns,
            "compactions": compactions,
            "bytes": size,
            "build_s": built_s,
        },
        "first_render_ms": first["render_ms"],
        "first_render_all_ms": first["render_all_ms"],
        "shell_fcp_ms": first["fcp_ms"],
        "first_page": page_info,
        "live": live,
        "pass": {
            "first_render": first["render_ms"] <= TARGET_RENDER_MS,
            "first_page": page_info["wire"] <= TARGET_PAGE_BYTES,
            "live_latency": live["median_ms"] <= TARGET_LATENCY_MS,
        },
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        f"web benchmark: session of {args.events} events ({turns} turns, {compactions} "
        f"compactions, {size / 1e6:.1f} MB JSONL, built in {built_s:.1f} s)"
    )
    print(
        f"  first contentful render of the last page: {first['render_ms']:.0f} ms median of "
        f"{len(first['render_all_ms'])} loads, cold first load {first['render_all_ms'][0]:.0f} ms "
        f"(shell FCP {first['fcp_ms']:.0f} ms; "
        f"{page_info['rows']} rows)  target <= {TARGET_RENDER_MS:.0f} ms  "
        f"{verdict(results['pass']['first_render'])}"
    )
    print(
        f"  first page: {page_info['messages']} messages, {page_info['events']} events, "
        f"{page_info['wire'] / 1024:.1f} KB sent ({page_info['encoding']}; "
        f"{page_info['uncompressed'] / 1024:.1f} KB uncompressed)  target <= "
        f"{TARGET_PAGE_BYTES // 1024} KB  {verdict(results['pass']['first_page'])}"
    )
    print(
        f"  live event latency, append -> DOM: median {live['median_ms']:.1f} ms, p95 "
        f"{live['p95_ms']:.1f} ms, max {live['max_ms']:.1f} ms over {live['events']} events  "
        f"target <= {TARGET_LATENCY_MS:.0f} ms  {verdict(results['pass']['live_latency'])}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
