"""Browser-test helpers: a served app, a page that fails on script errors, and ways to read the
conversation through its virtualised view (rows of parked blocks included)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dsh.web import BackgroundServer
from tests.web.conftest import WebEnv

ARTIFACTS = Path(__file__).parent / "artifacts"


@contextlib.contextmanager
def serve(env: WebEnv) -> Iterator[BackgroundServer]:
    server = BackgroundServer(env.app()).start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def open_page(browser: Any, height: int = 800) -> Iterator[Any]:
    """A fresh page; fails the test on any script error or console error it logs."""
    context = browser.new_context(viewport={"width": 1280, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    try:
        yield page
    finally:
        context.close()
    assert errors == []


def first_page_loaded(page: Any) -> None:
    page.wait_for_function(
        "() => window.dsh && window.dsh.info"
        " && performance.getEntriesByName('dsh:first-page').length > 0"
    )


def wait_idle(page: Any) -> None:
    page.wait_for_function("() => window.dsh.info && window.dsh.info.running === null")


def wait_turn_over(page: Any, reply: str) -> None:
    """Wait until ``reply`` shows in the conversation and the session is idle again.

    ``wait_idle`` alone can pass before a just-sent turn has been reported running (a loaded
    machine), and a prompt sent then is refused as busy."""
    page.wait_for_function(
        "(reply) => [...document.querySelectorAll('#log .row')]"
        ".some((row) => row.textContent.includes(reply))",
        arg=reply,
    )
    wait_idle(page)


def send(page: Any, text: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def snapshot(page: Any) -> tuple[str, str]:
    """The conversation with every disclosure closed: (its rows' markup in order, parked blocks
    included, whatever blocks hold them; the text on screen)."""
    result: list[str] = page.evaluate(
        """() => {
            const view = window.dsh.view;
            const shut = (d) => { d.open = false; };
            for (const r of view.allRows()) r.querySelectorAll('details').forEach(shut);
            return [view.html(), document.getElementById('log').innerText];
        }"""
    )
    return result[0], result[1]


def reveal(page: Any, selector: str) -> None:
    """Scroll the first conversation row matching ``selector`` into view (its block unparked)."""
    page.evaluate(
        "(sel) => window.dsh.view.reveal(window.dsh.view.allRows().find((r) => r.matches(sel)))",
        selector,
    )


def view_rows(page: Any, selector: str) -> list[str]:
    """The text of every conversation row matching ``selector``, in order, including the rows of
    blocks parked out of the page."""
    texts: list[str] = page.evaluate(
        "(sel) => window.dsh.view.allRows().filter((r) => r.matches(sel))"
        ".map((r) => r.textContent)",
        selector,
    )
    return texts


def scroll_to_beginning(page: Any) -> None:
    for _ in range(50):
        if not page.evaluate("() => window.dsh.hasMore"):
            return
        page.evaluate("() => { document.getElementById('conversation').scrollTop = 0; }")
        page.wait_for_function("() => !window.dsh.loadingOlder")
        page.wait_for_timeout(30)
    raise AssertionError("history never reached its beginning")


def same_as_one_pass(page: Any) -> bool:
    """True iff the conversation on screen (built page by page, newest first, plus live events)
    is the DOM the same modules build from the whole log fed at once, in order."""
    result: bool = page.evaluate(
        """async () => {
            const base = '/s';
            const { Projector } = await import(`${base}/projection.js`);
            const { TranscriptView } = await import(`${base}/view.js`);
            const { api } = await import(`${base}/api.js`);  // with the page's token
            const sid = window.dsh.sessionId;
            const page = await api('GET', `/api/sessions/${sid}/history?max_messages=500`);
            if (page.hasMore) throw new Error('session too long for one page');
            const root = document.createElement('div');
            const whole = new TranscriptView(root, new Projector());
            whole.ingest(page.events);
            const view = window.dsh.view;
            const shut = (d) => { d.open = false; };
            for (const r of view.allRows()) r.querySelectorAll('details').forEach(shut);
            // every attached row sits in the page in seq order
            const shown = [...document.querySelectorAll('#log > .block > .row')];
            const order = view.allRows().filter((r) => r.isConnected);
            if (shown.length !== order.length || shown.some((r, i) => r !== order[i])) return false;
            return whole.html() === view.html();
        }"""
    )
    return result


def stored_events(env: WebEnv, session_id: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in env.log_lines(session_id)]
