"""dsh's warnings while ``dsh web`` serves, over a real uvicorn server: one raised serving a
session goes to that session's live stream (and the hello of a page that connects later), one
raised elsewhere to the server's stream (``WS /api/live``) every page holds; identical ones
coalesce into one counted entry; none is written into a session's log."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient
from websockets.sync.client import connect

import dsh.cli.web as web_cli
from dsh.config import McpServerSettings, McpSettings
from dsh.errors import ERROR_LINE_CHARS, SHOWN_AS_ERROR, WARNING_LINE_CHARS, error_line
from dsh.tools.mcp import close_mcp_servers
from dsh.web.warning_feed import UPDATE_EVERY, WarningFeed
from tests.web.conftest import AUTH, WebEnv, make_env, wait_idle
from tests.web.test_live import Live, Served

NEVER_STARTS = McpServerSettings(
    command=[sys.executable, "-c", "raise SystemExit(3)"], startup_timeout_s=300
)


def server_live(served: Served) -> Live:
    url = f"ws://127.0.0.1:{served.server.port}/api/live"
    return Live(connect(url, proxy=None, open_timeout=10, additional_headers=AUTH, legacy=True))


def from_a_thread(message: str, times: int = 1) -> None:
    """Log ``message`` on ``dsh.tools.mcp`` from a thread of its own (no session's work)."""

    def log() -> None:
        for _ in range(times):
            logging.getLogger("dsh.tools.mcp").warning(message)

    thread = threading.Thread(target=log)
    thread.start()
    thread.join()


def warning_frame(frame: dict[str, Any]) -> bool:
    return frame["kind"] == "warning"


def test_a_warning_raised_serving_a_session_reaches_its_pages_only_and_not_its_log(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    env.settings = msgspec.structs.replace(
        env.settings, mcp=McpSettings(servers={"broken": NEVER_STARTS})
    )
    env.script = [{"text": "ok"}]
    served = Served(env)
    try:
        first, other = served.new_session(), served.new_session()
        live, server = served.live(first), server_live(served)
        assert live.next()["warnings"] == []
        assert server.next() == {"kind": "hello", "warnings": [], "routeWaits": []}
        # the session's first turn starts its MCP servers (in a worker thread): one never starts
        served.http.post(f"/api/sessions/{first}/prompt", json={"text": "hi"})
        warning = live.until(warning_frame, timeout=120)[-1]["warning"]
        assert warning["session"] == first and warning["level"] == "warning"
        assert warning["text"].startswith("MCP server broken did not start:")
        assert warning["count"] == 1 and warning["first"] == warning["last"]
        from_a_thread("a warning of the server's own")  # not a session's: the server's stream
        *others, shown_frame = server.until(warning_frame)  # the session's never came here
        assert {frame["kind"] for frame in others} <= {"session-state"}  # its list's states
        shown = shown_frame["warning"]
        assert (shown["session"], shown["text"]) == (None, "a warning of the server's own")
        wait_idle(served.http, first, timeout=120)
        later = served.live(first).next()  # a page that opens the session now
        assert [w["text"] for w in later["warnings"]] == [warning["text"]]
        assert served.live(other).next()["warnings"] == []
        kept = served.http.get("/api/warnings").json()["warnings"]
        assert [w["text"] for w in kept] == ["a warning of the server's own"]
        assert not any(b"did not start" in line for line in env.log_lines(first))
    finally:
        served.close()
        close_mcp_servers()


def test_identical_warnings_coalesce_into_one_entry_whose_count_grows(env: WebEnv) -> None:
    """Repeats in a tight loop: one entry; the pages get its first at once and then at most one
    update per ``UPDATE_EVERY`` (the server loop's timer), the last with the final count."""
    served = Served(env)
    try:
        server = server_live(served)
        assert server.next()["kind"] == "hello"
        started = time.monotonic()
        from_a_thread("server t   crashed,\n restarted", times=500)
        logging_took = time.monotonic() - started
        frames = [f["warning"] for f in server.until(lambda f: f["warning"]["count"] == 500)]
        counts = [w["count"] for w in frames]
        assert counts[0] == 1 and counts == sorted(set(counts))
        # each update at least UPDATE_EVERY after the one before, and one after the loop ended
        assert len(frames) <= 2 + logging_took / UPDATE_EVERY < 500
        assert len({w["id"] for w in frames}) == 1
        assert frames[0]["text"] == "server t crashed, restarted"  # one line
        (kept,) = served.http.get("/api/warnings").json()["warnings"]
        assert kept["count"] == 500 and kept["first"] <= kept["last"]
        again = server_live(served).next()  # a page opened later gets the entry, counted
        assert [(w["id"], w["count"]) for w in again["warnings"]] == [(kept["id"], 500)]
    finally:
        served.close()


def _startup_warnings(monkeypatch: pytest.MonkeyPatch, *args: str) -> list[str]:
    """Start ``dsh web ARGS`` (its server never serves) and return the texts of the server's
    kept warnings, as a page asks for them."""
    apps: list[Any] = []

    class NoServer:
        stopped_by = None  # served until its end, no signal

        def run(self, sockets: list[Any]) -> None:
            for sock in sockets:
                sock.close()

    def make_server(app: Any) -> NoServer:
        apps.append(app)
        return NoServer()

    monkeypatch.setattr(web_cli, "make_server", make_server)
    result = CliRunner().invoke(web_cli.web, ["--port", "0", "--no-open", *args])
    assert result.exit_code == 0, result.output
    url = result.stdout.split("dsh web: open ", 1)[1].split()[0]  # http://127.0.0.1:PORT/?token=T
    base, token = url.split("/?token=")
    with TestClient(apps[0], base_url=base) as client:
        client.headers.update({"Authorization": f"Bearer {token}"})
        return [w["text"] for w in client.get("/api/warnings").json()["warnings"]]


def test_what_starting_dsh_web_warned_is_kept_for_the_pages(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``dsh web`` listens for warnings before it reads its configuration: an environment
    variable it ignores, said while it starts, is in the server's kept warnings."""
    variable = f"DSH_NO_SUCH_SECTION_{os.getpid()}"
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(variable, "1")
    ignored = (
        f"ignored environment variable {variable}: no config section matches (see docs/config.md)"
    )
    assert ignored in _startup_warnings(monkeypatch)


def test_a_web_server_without_a_provider_key_says_so_to_its_pages(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With no key, ``dsh web`` still serves the sessions, but every prompt will fail: a person
    who opens the page (not the terminal that started it) must be told, as stderr says."""
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    for name in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    kept = _startup_warnings(monkeypatch, "--token", "short")
    assert any(t.startswith("the web token is shorter than") for t in kept), kept
    assert any("no API key for deepseek" in t and "prompts will fail" in t for t in kept), kept


def test_a_failure_the_page_shows_as_its_error_is_kept_marked_for_listing_only() -> None:
    """The page lists it without a toast (it shows as the page's error already); an error
    logged without the mark is an ordinary entry, toasted."""
    feed = WarningFeed()
    log = logging.getLogger("dsh.web")
    with feed.installed():
        log.error("the turn failed in session s1", extra={SHOWN_AS_ERROR: True})
        log.error("a compaction pass failed")
    kept = [(w["level"], w["text"], w["shownAsError"]) for w in feed.kept(None)]
    assert kept == [
        ("error", "the turn failed in session s1", True),
        ("error", "a compaction pass failed", False),
    ]


def test_a_huge_warning_is_kept_and_sent_as_one_line_cut_to_the_warning_bound(
    env: WebEnv,
) -> None:
    """A warning quoting a huge text (a server's reply, a log line) reaches the pages as the
    terminal UI and stderr show it: one line, escapes shown, at most ``WARNING_LINE_CHARS``."""
    huge = "a reply\n\x1b[31m" + "quoted words " * 20_000
    served = Served(env)
    try:
        server = server_live(served)
        assert server.next()["kind"] == "hello"
        from_a_thread(huge)
        (sent,) = [f["warning"] for f in server.until(warning_frame)]
        assert sent["text"] == error_line(huge, WARNING_LINE_CHARS)
        assert len(sent["text"]) == WARNING_LINE_CHARS and sent["text"].endswith("…")
        assert sent["text"].startswith("a reply \\x1b[31mquoted words quoted")
        (kept,) = served.http.get("/api/warnings").json()["warnings"]
        assert kept["text"] == sent["text"]
    finally:
        served.close()


def test_an_errors_line_is_one_line_its_unprintables_escaped_and_cut_to_the_bound() -> None:
    """What the ⚠ list shows of a turn's internal error (and the server's stderr prints)."""
    error = RuntimeError("a <b>bug</b>\n\tin\r\nthe provider\x1b[31m \u202eevil\x00")
    line = error_line(error)
    assert line == "RuntimeError: a <b>bug</b> in the provider\\x1b[31m \\u202eevil\\x00"
    assert error_line(ValueError("x" * 10)) == "ValueError: xxxxxxxxxx"
    long = error_line(ValueError("é" * 5000))
    assert len(long) == ERROR_LINE_CHARS and long == "ValueError: " + "é" * 287 + "…"
    assert error_line(ValueError("ab"), limit=15) == "ValueError: ab"
    assert error_line(ValueError("abcd"), limit=15) == "ValueError: ab…"
