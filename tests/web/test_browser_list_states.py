"""The session list's states of the sessions a page does not show follow live, without a reload:
a turn another page (here, an API client) runs in this server, its start and its end, and a
writer lock another process (a real ``dsh run``) takes and releases (``dsh.web.list_states``:
the server's stream's ``session-state`` frames, and its sweep of the lock files)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsh.surface import Session
from tests.web.conftest import AUTH, TOKEN, make_env, wait_until
from tests.web.pages import first_page_loaded, open_page, serve

DSH = Path(sys.executable).parent / "dsh"  # the console script of this environment

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def stored_session(env: Any) -> str:
    session = Session.create(env.store, cwd=env.workspace)
    session.close()
    return session.id


def badge_text(page: Any, sid: str) -> str:
    return str(page.locator(f"#session-list .session-item[data-id='{sid}'] .state").inner_text())


def wait_badge(page: Any, sid: str, text: str) -> None:
    """Wait (the default timeout) until the list's item of ``sid`` says ``text``."""
    page.wait_for_function(
        """([sid, text]) => {
            const item = document.querySelector(`#session-list .session-item[data-id="${sid}"]`);
            return item !== null && item.querySelector('.state').textContent === text;
        }""",
        arg=[sid, text],
    )


def open_counting_list_reads(page: Any, base_url: str, sid: str) -> int:
    """Open the page on ``sid`` with ``window.listReads`` counting its reads of the session
    list; once the server's stream said hello and no read is under way, how many it made."""
    page.add_init_script(
        """window.listReads = 0;
        window.listReading = 0;
        const fetched = window.fetch;
        window.fetch = (path, init) => {
            if (path !== '/api/sessions' || init.method !== 'GET') return fetched(path, init);
            window.listReads += 1;
            window.listReading += 1;
            return fetched(path, init).finally(() => { window.listReading -= 1; });
        };
        const Socket = window.WebSocket;
        window.WebSocket = class extends Socket {
            constructor(...args) {
                super(...args);
                if (String(args[0]).endsWith('/api/live')) {
                    this.addEventListener('message', () => { window.serverHello = true; });
                }
            }
        };"""
    )
    page.goto(f"{base_url}/?token={TOKEN}#s={sid}")
    first_page_loaded(page)
    page.wait_for_function("() => window.serverHello && window.listReading === 0")
    return int(page.evaluate("() => window.listReads"))


def test_another_sessions_turn_here_shows_in_its_item_as_it_starts_and_ends(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path, approval="ask")  # its turn waits on its write's approval
    write = {"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}
    env.script = [{"toolCalls": [write]}, {"text": "wrote it"}]
    shown, other = stored_session(env), stored_session(env)
    with serve(env) as server, open_page(browser) as page:
        reads = open_counting_list_reads(page, server.base_url, shown)
        wait_badge(page, other, "idle")
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as api:
            path = f"/api/sessions/{other}"
            assert api.post(f"{path}/resume").status_code == 200
            wait_badge(page, other, "live here")
            assert api.post(f"{path}/prompt", json={"text": "write x"}).status_code == 202
            wait_badge(page, other, "running")
            approvals = wait_until(lambda: api.get(path).json()["approvals"], what="the approval")
            answer = {"answer": "once"}
            api.post(f"{path}/approvals/{approvals[0]['id']}", json=answer)
            wait_badge(page, other, "live here")
            assert api.get(path).json()["running"] is None
            assert api.post(f"{path}/close").status_code == 200
            wait_badge(page, other, "idle")
        assert badge_text(page, shown) == "idle"  # the shown one's is its header's, untouched
        assert page.evaluate("() => window.listReads") == reads  # no reload, nor a list read


def test_another_process_taking_and_releasing_a_session_shows_in_its_item(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    shown, other = stored_session(env), stored_session(env)
    started, release = tmp_path / "started", tmp_path / "release"
    wait_loop = f"touch {started}; while [ ! -e {release} ]; do sleep 0.02; done"
    script = tmp_path / "script.json"
    call = {"name": "bash", "arguments": {"command": wait_loop}}
    script.write_text(json.dumps([{"toolCalls": [call]}, {"text": "done elsewhere"}]))
    with serve(env) as server, open_page(browser) as page:
        reads = open_counting_list_reads(page, server.base_url, shown)
        wait_badge(page, other, "idle")
        writer = subprocess.Popen(
            [str(DSH), "run", "--session", other, "--provider", "scripted",
             "--script", str(script), "--yes", "hold it a while"],
            env={**os.environ, "DSH_HOME": str(env.store.home)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=env.workspace,
        )  # fmt: skip
        try:
            wait_until(started.exists, 30, "the other process to start its tool")
            wait_badge(page, other, f"busy elsewhere (pid {writer.pid})")
            release.touch()
            _out, err = writer.communicate(timeout=60)
            assert writer.returncode == 0, err.decode()
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
        wait_badge(page, other, "idle")
        assert badge_text(page, shown) == "idle"
        assert page.evaluate("() => window.listReads") == reads  # no reload, nor a list read


def test_a_session_created_after_the_list_was_read_shows_in_it(
    browser: Any, tmp_path: Path
) -> None:
    """Another tab (here, an API client) starts a session and prompts it: the page's list, read
    before the session existed, lists it once the server's stream names it (its turn), without
    a reload."""
    env = make_env(tmp_path)
    env.script = [{"text": "made elsewhere"}]
    shown = stored_session(env)
    with serve(env) as server, open_page(browser) as page:
        open_counting_list_reads(page, server.base_url, shown)
        assert page.locator("#session-list .session-item").count() == 1
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as api:
            created = api.post("/api/sessions", json={}).json()["session"]["id"]
            assert (
                api.post(f"/api/sessions/{created}/prompt", json={"text": "hi"}).status_code == 202
            )
        page.wait_for_selector(f"#session-list .session-item[data-id='{created}']")
        wait_badge(page, created, "live here")
        assert badge_text(page, shown) == "idle"
        assert (
            page.locator("#session-list .session-item.selected").get_attribute("data-id") == shown
        )
