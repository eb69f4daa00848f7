"""dsh's warnings in the page, in a real browser: a warning raised server-side shows live as a
toast (a real MCP server crashing mid-session included), on the pages of its session only, or
on every page when it is the server's; repeats coalesce into one counted toast and row; the
list survives dismissing a toast and switching sessions, is emptied by Clear, and after a
reload holds again what the server kept."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dsh.agent.runtime import Route
from dsh.config import McpSettings
from dsh.errors import ERROR_LINE_CHARS, WARNING_LINE_CHARS
from dsh.events import Event
from dsh.llm.types import ModelRequest, StreamEvent
from dsh.surface import Session
from dsh.tools.mcp import close_mcp_servers
from dsh.web import BackgroundServer, WebRuntime
from dsh.web.warning_feed import WARNING_SESSION
from tests.helpers import append_chat_turn
from tests.mcp.conftest import server as mcp_server
from tests.web.conftest import TOKEN, WebEnv, make_env
from tests.web.pages import ARTIFACTS, first_page_loaded, open_page, send, serve, wait_turn_over

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TOASTS = "#warning-toasts .warning-toast"
ROWS = "#warnings-list .warning-row"
CRASH_SCRIPT = [
    {"toolCalls": [{"name": "mcp__t__crash", "arguments": {}}]},
    {"text": "It crashed."},
]


def stored_session(env: WebEnv, question: str | None) -> str:
    """A stored session of one chat turn (None: of none; the scripted model answers by the
    number of model calls in the log)."""
    with Session.create(env.store, cwd=env.workspace) as session:
        if question is not None:
            append_chat_turn(session, question, "an answer")
        return session.id


def from_a_thread(message: str, times: int = 1, level: int = logging.WARNING) -> None:
    """Log ``message`` from a thread of its own: not a session's work, so the server's."""

    def log() -> None:
        for _ in range(times):
            logging.getLogger("dsh.tools.mcp").log(level, message)

    thread = threading.Thread(target=log)
    thread.start()
    thread.join()


def for_session(server: BackgroundServer, session_id: str, message: str, level: int) -> None:
    """Log ``message`` on the server's loop as work for ``session_id`` does."""

    def log() -> None:
        WARNING_SESSION.set(session_id)  # in the task ``call`` runs it in, as a request sets it
        logging.getLogger("dsh.compaction").log(level, message)

    server.call(log)


def watching(page: Any, url: str | None) -> None:
    """Open ``url`` (None: the page is already loading); toasts stay up until closed (no timer
    races the test); wait until both streams (the server's, and the session's if one is shown)
    are connected."""
    if url is not None:
        page.goto(url)
    page.wait_for_function("() => window.dsh && window.dsh.warnings")
    page.evaluate("() => { window.dsh.warnings.toastMs = null; }")
    page.wait_for_function("() => window.dsh.warnings.socket?.readyState === 1")
    if "#s=" in page.url:
        first_page_loaded(page)
        page.wait_for_function("() => window.dsh.socket?.readyState === 1")


def toasts(page: Any) -> list[str]:
    texts: list[str] = page.locator(f"{TOASTS} .toast-text").all_inner_texts()
    return texts


def rows(page: Any) -> list[str]:
    """The rows of the warnings list (open or not), each its parts joined by spaces."""
    texts: list[str] = page.evaluate(
        "(sel) => [...document.querySelectorAll(sel)]"
        ".map((row) => [...row.children].map((part) => part.textContent.trim()).join(' '))",
        ROWS,
    )
    return texts


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_an_mcp_server_restarted_in_a_turn_shows_on_that_sessions_page_only(
    browser: Any, tmp_path: Path
) -> None:
    pytest.importorskip("mcp")
    env = make_env(tmp_path)
    env.settings = msgspec.structs.replace(
        env.settings, mcp=McpSettings(servers={"t": mcp_server()})
    )
    env.script = CRASH_SCRIPT
    shown, other = stored_session(env, None), stored_session(env, "another one")
    try:
        with serve(env) as server, open_page(browser) as page, open_page(browser) as elsewhere:
            watching(page, f"{server.base_url}/?token={TOKEN}#s={shown}")
            watching(elsewhere, f"{server.base_url}/?token={TOKEN}#s={other}")
            send(page, "crash it")  # the server dies in the call: dsh restarts it, and warns
            page.wait_for_selector(TOASTS)
            (toast,) = toasts(page)
            assert toast.startswith("warning: MCP server t crashed")
            assert "was restarted (restart 1 of at most 3)" in toast
            wait_turn_over(page, "It crashed.")
            page.click("#warnings-toggle")
            (row,) = rows(page)
            assert toast in row and row.endswith(f"session {shown}")
            shot(page, "warnings-mcp-restart")

            from_a_thread("a warning of the server's own")  # every page gets this one
            elsewhere.wait_for_selector(f"{TOASTS}:has-text('of the server')")
            assert toasts(elsewhere) == ["warning: a warning of the server's own"]  # that only
            page.wait_for_selector(f"{TOASTS}:has-text('of the server')")
        assert not any(
            b"crashed" in line and b"restarted (" in line for line in env.log_lines(shown)
        )
    finally:
        close_mcp_servers()


class BuggyProvider:
    """A provider with a bug: its stream raises an exception dsh has no name for."""

    name = "scripted"

    def __init__(self, message: str = "a bug in the provider") -> None:
        self.message = message

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        raise RuntimeError(self.message)
        yield  # an async generator


@contextlib.contextmanager
def failing_turn(
    browser: Any, tmp_path: Path, message: str
) -> Iterator[tuple[Any, str, BackgroundServer]]:
    """A page on a stored session whose turn, sent, failed with ``RuntimeError(message)``; the
    session's id and the server."""
    env = make_env(tmp_path)
    sid = stored_session(env, None)
    runtime = WebRuntime(env.settings, Route(BuggyProvider(message), "scripted", env.window))
    server = BackgroundServer(env.app(runtime)).start()
    try:
        with open_page(browser) as page:
            watching(page, f"{server.base_url}/?token={TOKEN}#s={sid}")
            page.evaluate("() => { window.dsh.toastMs = null; }")
            send(page, "go")
            page.wait_for_selector(f"{ROWS}:has-text('the turn failed')", state="attached")
            page.locator("#toast").wait_for(state="visible")
            yield page, sid, server
    finally:
        server.stop()


def test_a_turns_internal_error_shows_once_as_the_pages_error_and_is_listed_with_its_text(
    browser: Any, tmp_path: Path
) -> None:
    """The page's error toast says the turn failed; the warnings show the same failure only in
    their list (no second, "error:" toast), with the error's text; a warning that is not shown
    otherwise, an error included, still gets its toast."""
    with failing_turn(browser, tmp_path, "a bug in the provider") as (page, sid, server):
        assert page.inner_text("#toast") == "the turn failed: RuntimeError: a bug in the provider"
        assert page.inner_text("#warnings-toggle") == "⚠ 1"
        assert "unread" in (page.get_attribute("#warnings-toggle", "class") or "")

        for_session(server, sid, "compaction pass p1: a region failed", logging.ERROR)
        page.wait_for_selector(f"{TOASTS}.error")
        assert toasts(page) == ["error: compaction pass p1: a region failed"]  # that only
        page.click("#warnings-toggle")
        listed = rows(page)
        said = f"error: the turn failed in session {sid}: RuntimeError: a bug in the provider"
        assert len(listed) == 2 and said in listed[0]


def test_a_turns_internal_error_is_listed_on_one_line_cut_short_and_as_text(
    browser: Any, tmp_path: Path
) -> None:
    """Markup in the error's text shows as text, a terminal escape as its escape, line breaks
    as spaces, and a long text cut to ``ERROR_LINE_CHARS``."""
    message = "<img src=x onerror=window.pwned=1>\n\x1b[31m" + "and on " * 200
    with failing_turn(browser, tmp_path, message) as (page, sid, _):
        page.click("#warnings-toggle")
        text = page.inner_text(f"{ROWS} .text")
        prefix = f"the turn failed in session {sid}: "
        assert text.startswith(f"{prefix}RuntimeError: <img src=x onerror=window.pwned=1> ")
        assert "\\x1b[31mand on and on" in text and "\n" not in text and "\x1b" not in text
        assert len(text) == len(prefix) + ERROR_LINE_CHARS and text.endswith("…")
        assert page.locator("#warnings-panel img").count() == 0
        assert page.evaluate("() => window.pwned") is None
        shot(page, "warnings-internal-error")


def test_repeats_coalesce_and_the_list_lasts_until_cleared_then_a_reload_brings_it_back(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    first, second = stored_session(env, "first session"), stored_session(env, "second session")
    with serve(env) as server, open_page(browser) as page, open_page(browser) as bare:
        watching(page, f"{server.base_url}/?token={TOKEN}#s={first}")
        watching(bare, f"{server.base_url}/?token={TOKEN}")  # a page showing no session
        assert page.is_hidden("#warnings-toggle")  # nothing to list yet

        from_a_thread("MCP server t crashed and was restarted")
        page.wait_for_selector(TOASTS)
        from_a_thread("MCP server t crashed and was restarted", times=2)
        page.wait_for_selector(f"{TOASTS}:has-text('(3 times)')")
        assert toasts(page) == ["warning: MCP server t crashed and was restarted (3 times)"]
        bare.wait_for_selector(f"{TOASTS}:has-text('(3 times)')")  # the server's: every page
        for_session(server, first, "compaction pass p1: a region failed", logging.ERROR)
        page.wait_for_selector(f"{TOASTS}.error")
        assert len(toasts(page)) == 2
        assert page.inner_text("#warnings-toggle") == "⚠ 2"
        assert "unread" in (page.get_attribute("#warnings-toggle", "class") or "")

        page.click(f"{TOASTS}.error button.toast-close")  # dismissed: the toast, not the entry
        page.wait_for_selector(f"{TOASTS}.error", state="detached")
        page.click("#warnings-toggle")
        listed = rows(page)
        assert len(listed) == 2 and "unread" not in (
            page.get_attribute("#warnings-toggle", "class") or ""
        )
        assert "warning: MCP server t crashed and was restarted (3 times, last at " in listed[0]
        assert listed[0].endswith("server")
        assert "error: compaction pass p1: a region failed" in listed[1]
        assert listed[1].endswith(f"session {first}")
        shot(page, "warnings-list")
        assert bare.locator(f"{TOASTS}.error").count() == 0  # a session's: not on other pages

        page.evaluate(f"() => {{ location.hash = '#s={second}'; }}")  # another session
        page.wait_for_function("() => window.dsh.info?.title === 'second session'")
        assert rows(page) == listed  # the list is the page's

        page.click("#warnings-clear")
        assert rows(page) == [] and toasts(page) == [] and page.is_hidden("#warnings-toggle")
        assert page.is_visible("#warnings-none")

        page.reload()  # the server kept them: the server's, and the shown session's
        watching(page, None)
        page.wait_for_selector("#warnings-toggle.unread")
        assert page.inner_text("#warnings-toggle") == "⚠ 1" and toasts(page) == []
        page.evaluate(f"() => {{ location.hash = '#s={first}'; }}")
        page.wait_for_function(
            "() => document.getElementById('warnings-toggle').textContent === '⚠ 2'"
        )
        assert toasts(page) == []  # what a hello brings is listed, not shown again
    lines = b"".join(env.log_lines(first))
    assert b"a region failed" not in lines  # not a conversation event


def test_a_toast_goes_by_itself_and_its_warning_stays_listed(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        watching(page, f"{server.base_url}/?token={TOKEN}")
        page.evaluate("() => { window.dsh.warnings.toastMs = 50; }")
        from_a_thread("a passing warning")
        page.wait_for_function("() => window.dsh.warnings.entries.size === 1")
        page.wait_for_selector(TOASTS, state="detached")
        page.click("#warnings-toggle")
        assert rows(page)[0].endswith("warning: a passing warning server")


def test_a_sessions_load_warning_is_listed_on_its_pages_once_per_load(
    browser: Any, tmp_path: Path
) -> None:
    """A stored session whose log ends in a torn line: the page that opens it lists what the
    load dropped, as ``dsh sessions show`` prints it; reloading the page (the server's copy is
    caught up, not loaded again) lists it once still; a page on another session never sees it."""
    env = make_env(tmp_path)
    torn, other = stored_session(env, "a torn one"), stored_session(env, "another one")
    path = env.store.log_path(torn)
    path.write_bytes(path.read_bytes() + b'{"type":"user/mess')
    said = f"warning: {path}: dropped a torn last line (18 bytes) left by an interrupted write"
    with serve(env) as server, open_page(browser) as page, open_page(browser) as elsewhere:
        watching(elsewhere, f"{server.base_url}/?token={TOKEN}#s={other}")
        watching(page, f"{server.base_url}/?token={TOKEN}#s={torn}")
        page.wait_for_selector(f"{ROWS}:has-text('dropped a torn last line')", state="attached")
        assert page.inner_text("#warnings-toggle") == "⚠ 1"
        page.click("#warnings-toggle")
        (row,) = rows(page)
        assert said in row and row.endswith(f"session {torn}") and "times" not in row
        shot(page, "warnings-load")

        page.reload()  # the hello brings it back, still once
        watching(page, None)
        page.wait_for_selector("#warnings-toggle.unread")
        page.click("#warnings-toggle")
        assert rows(page) == [row] and toasts(page) == []
        assert elsewhere.is_hidden("#warnings-toggle") and toasts(elsewhere) == []


def test_a_huge_warnings_toast_takes_a_few_lines_and_scrolls_so_the_conversation_stays_usable(
    browser: Any, tmp_path: Path
) -> None:
    """A warning quoting a huge text: the server sends it cut to ``WARNING_LINE_CHARS`` and its
    toast is a few lines high, its text scrolling inside it, so the reply's row beside it is not
    covered; its ✕ still closes it."""
    env = make_env(tmp_path)
    sid = stored_session(env, "a question")
    with serve(env) as server, open_page(browser) as page:
        watching(page, f"{server.base_url}/?token={TOKEN}#s={sid}")
        from_a_thread("a server replied: " + "many quoted words " * 5000)
        page.wait_for_selector(TOASTS)
        (text,) = toasts(page)
        assert len(text) == len("warning: ") + WARNING_LINE_CHARS and text.endswith("…")
        box = page.locator(TOASTS).bounding_box()
        assert box is not None and box["height"] <= 0.25 * 800
        scrolls = page.evaluate(
            "(sel) => { const t = document.querySelector(sel);"
            " return [t.scrollHeight > t.clientHeight, getComputedStyle(t).overflowY]; }",
            f"{TOASTS} .toast-text",
        )
        assert scrolls == [True, "auto"]
        # the reply's row, level with the toast's third line and under its width, gets the click
        answer = page.locator("#log .row.assistant").bounding_box()
        assert answer is not None and answer["x"] + answer["width"] > box["x"] + 40
        hit = page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).closest('.row')?.textContent ?? null",
            [box["x"] + 40, answer["y"] + answer["height"] / 2],
        )
        assert hit is not None and "an answer" in hit
        shot(page, "warnings-huge")
        page.click(f"{TOASTS} button.toast-close")
        page.wait_for_selector(TOASTS, state="detached")
