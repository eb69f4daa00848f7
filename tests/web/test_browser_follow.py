"""A page open on a session another process writes: a real ``dsh run`` on the same session.
Its events stream into the page as they are appended, and while it holds the writer lock the
page says so, in its header and in the session's item in the list alike, and keeps its composer
disabled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.surface import Session
from dsh.tui.running_cards import RUNNING
from tests.web.conftest import TOKEN, make_env, wait_until
from tests.web.pages import ARTIFACTS, first_page_loaded, open_page, same_as_one_pass, serve

DSH = Path(sys.executable).parent / "dsh"  # the console script of this environment

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
ELSEWHERE = "in another process…"  # static/running.js: it may wait there for its approval
RUNS = f"^{ELSEWHERE}( [0-9]+ s)?$"
COUNTED = f"^{ELSEWHERE} [0-9]+ s$"


def test_a_session_written_by_another_process_streams_in_and_shows_who_holds_it(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    session = Session.create(env.store, cwd=env.workspace)
    sid = session.id
    session.close()
    started, release = tmp_path / "started", tmp_path / "release"
    wait_loop = f"touch {started}; while [ ! -e {release} ]; do sleep 0.02; done; echo released"
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {
                    "text": "working in another process",
                    "toolCalls": [{"name": "bash", "arguments": {"command": wait_loop}}],
                },
                {"text": "finished in another process"},
            ]
        )
    )
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        page.wait_for_function("() => window.dsh.socket && window.dsh.socket.readyState === 1")
        assert page.is_enabled("#prompt") and page.is_hidden("#busy-elsewhere")
        badge = page.locator(f"#session-list .session-item[data-id='{sid}'] .state")
        badge.wait_for()
        assert badge.inner_text() == "idle"

        writer = subprocess.Popen(
            [str(DSH), "run", "--session", sid, "--provider", "scripted",
             "--script", str(script), "--yes", "hello from a terminal"],
            env={**os.environ, "DSH_HOME": str(env.store.home)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=env.workspace,
        )  # fmt: skip
        try:
            wait_until(started.exists, 30, "the other process to start its tool")
            # its events so far are on the page without a reload, and it holds the session
            page.wait_for_selector("#log .row.user:has-text('hello from a terminal')")
            page.wait_for_selector("#log .row.assistant:has-text('working in another process')")
            # it is there, counted from its call's start (``… N s`` from its first second); the
            # page cannot tell it runs from it waiting there for its approval: it says neither
            page.wait_for_selector(f"#log .row.tool .tool-status:text-matches('{RUNS}')")
            status = page.locator("#log .row.tool .tool-status")
            assert "waiting there for its approval" in str(status.get_attribute("title"))
            assert RUNNING not in status.inner_text()
            busy = page.locator("#busy-elsewhere")
            busy.wait_for()
            assert busy.inner_text() == f"busy in another process (pid {writer.pid})"
            # the list says what the header says, without a reload (both draw one state)
            assert badge.inner_text() == f"busy elsewhere (pid {writer.pid})"
            assert page.is_disabled("#prompt") and page.is_disabled("#send")
            # its card counts while that process runs it, as one run here
            page.wait_for_selector(f"#log .row.tool .tool-status:text-matches('{COUNTED}')")
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "busy-in-another-process.png"))

            release.touch()
            _out, err = writer.communicate(timeout=60)
            assert writer.returncode == 0, err.decode()
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
        # the rest of the turn arrived, the lock is free again, the composer is back
        page.wait_for_selector("#log .row.assistant:has-text('finished in another process')")
        page.wait_for_selector("#log .row.tool .tool-status:text-is('done')")
        page.wait_for_function("() => document.getElementById('busy-elsewhere').hidden")
        assert badge.inner_text() == "idle"
        assert page.is_enabled("#prompt")
        assert "released" in page.locator("#log .row.tool .tool-output").text_content()
        # what streamed in is what a reload builds
        assert same_as_one_pass(page)
        page.screenshot(path=str(ARTIFACTS / "followed-from-another-process.png"))
