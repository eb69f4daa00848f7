"""A page open on a session a real ``dsh run`` in another process writes shows the reply that
process's model is streaming, as it streams, and once it is logged shows it once: the model (a
stand-in server on 127.0.0.1) sends part of a reply and holds the rest while the page is looked
at."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from dsh.surface import Session
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer, oa_chunk, oa_usage, openai_stream
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import ARTIFACTS, first_page_loaded, open_page, serve

DSH = str(Path(sys.executable).with_name("dsh"))
PARTIAL = "Reading the notes first"
REST = ", then answering."

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_a_page_shows_the_reply_another_process_streams_then_the_logged_reply_once(
    browser: Any,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    release = threading.Event()
    reply = openai_stream(
        oa_chunk(content=PARTIAL),
        oa_chunk(content=REST),
        oa_chunk(finish="stop"),
        oa_chunk(no_choices=True, usage=oa_usage(10, 5)),
    )
    server.queue(Canned(reply.status, reply.headers, reply.parts, hold=release, hold_before=1))
    env = make_env(tmp_path)
    session = Session.create(env.store, cwd=env.workspace)
    sid = session.id
    session.close()
    route = ["--provider", "openai-compatible", "--base-url", server.url + "/v1", "--model", "q"]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    environ["DSH_HOME"] = str(env.store.home)
    with serve(env) as web, open_page(browser) as page:
        page.goto(f"{web.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        page.wait_for_function("() => window.dsh.socket && window.dsh.socket.readyState === 1")
        writer = subprocess.Popen(
            [DSH, "run", "--session", sid, *route, "read the notes"],
            env=environ, cwd=env.workspace, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            page.wait_for_function(
                "(text) => !document.getElementById('live-tail').hidden && document"
                ".querySelector('#live-tail .stream-text').textContent.includes(text)",
                arg=PARTIAL,
            )
            # the model still holds the rest: nothing of the reply is logged yet
            types = [json.loads(line)["type"] for line in env.log_lines(sid)]
            assert "assistant/message" not in types
            assert PARTIAL not in (page.locator("#log").text_content() or "")
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "streaming-from-another-process.png"))
            release.set()
            _out, err = writer.communicate(timeout=120)
            assert writer.returncode == 0, err.decode()
        finally:
            release.set()
            if writer.poll() is None:
                writer.kill()
                writer.wait()
        page.wait_for_selector(f"#log .row.assistant:has-text('{PARTIAL + REST}')")
        page.wait_for_function("() => document.getElementById('live-tail').hidden")
        assert page.locator("#live-tail .stream-text").text_content() == ""
        assert (page.locator("#log").text_content() or "").count(PARTIAL) == 1
