"""The web's live bubble agrees with the logged reply when a model writes its reasoning as plain
text closed by a lone ``</think>`` (its template opened ``<think>`` in the prompt): the text
shows as it streams, and once the tag comes the bubble moves it to the reasoning, before the
reply is logged, as the terminal UI does (``dsh.llm.types.TextWasReasoning``). So does a tab
that joins after the move, and a page following a ``dsh run`` in another process (through its
live side file, ``dsh.agent.live_text``).

The model is a real HTTP server on 127.0.0.1 streaming SSE chat completions that holds its reply
before the tag and again after the answer's first words."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from dsh.agent.runtime import Route
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.surface import Session
from dsh.web import BackgroundServer, WebRuntime
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer, oa_chunk, openai_stream
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import first_page_loaded, open_page, send, serve, wait_turn_over

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DSH = str(Path(sys.executable).with_name("dsh"))
REASONING = "Okay, the user wants the sum.\n2 and 2 make 4.\n"
FIRST = "The answer"
REST = " is 4."
BUBBLE = """() => {
    const tail = document.getElementById('live-tail');
    return tail.hidden ? null : {
        text: tail.querySelector('.stream-text').textContent,
        reasoning: tail.querySelector('.stream-reasoning').textContent,
    };
}"""


def _held_reply(fake: FakeServer) -> tuple[threading.Event, threading.Event]:
    """Queue the reply: its reasoning, then (at the first event) the lone tag and the answer's
    first words, then (at the second) the rest. Returns both events."""
    at_tag, at_rest = threading.Event(), threading.Event()
    reply = openai_stream(
        oa_chunk(content=REASONING[:20]),
        oa_chunk(content=REASONING[20:]),
        oa_chunk(content="</think>\n\n"),
        oa_chunk(content=FIRST),
        oa_chunk(content=REST),
        oa_chunk(finish="stop"),
    )
    fake.queue(Canned(reply.status, reply.headers, reply.parts, holds=((2, at_tag), (4, at_rest))))
    return at_tag, at_rest


def _bubble_is(page: Any, text: str, reasoning: str) -> None:
    page.wait_for_function(
        f"([text, reasoning]) => {{ const b = ({BUBBLE})();"
        " return b !== null && b.text === text && b.reasoning === reasoning; }",
        arg=[text, reasoning],
    )


def test_the_live_bubble_moves_streamed_text_to_the_reasoning_at_a_lone_closing_tag(
    browser: Any,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    at_tag, at_rest = _held_reply(server)
    env = make_env(tmp_path)
    provider = OpenAICompatProvider("openai-compatible", "m", server.url, "k")
    web = BackgroundServer(env.app(WebRuntime(env.settings, Route(provider, "m", 8000))))
    web.start()
    try:
        with open_page(browser) as page, open_page(browser) as joined:
            page.goto(f"{web.base_url}/?token={TOKEN}")
            page.click("#new-session")
            page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
            send(page, "2+2?")
            _bubble_is(page, REASONING, "")  # not known to be reasoning yet: shown as text
            at_tag.set()
            _bubble_is(page, FIRST, REASONING)  # the tag came: moved, the reply not logged
            sid = page.evaluate("() => window.dsh.sessionId")
            joined.goto(f"{web.base_url}/?token={TOKEN}#s={sid}")
            first_page_loaded(joined)
            _bubble_is(joined, FIRST, REASONING)  # a tab joining after the move sees it moved
            at_rest.set()
            for tab in (page, joined):
                wait_turn_over(tab, FIRST + REST)
                tab.wait_for_function("() => document.getElementById('live-tail').hidden")
    finally:
        at_tag.set()
        at_rest.set()
        web.stop()


def test_a_page_following_another_process_moves_it_too(
    browser: Any,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    at_tag, at_rest = _held_reply(server)
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
            [DSH, "run", "--session", sid, *route, "2+2?"],
            env=environ, cwd=env.workspace, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            _bubble_is(page, REASONING, "")
            at_tag.set()
            _bubble_is(page, FIRST, REASONING)
            at_rest.set()
            out, err = writer.communicate(timeout=120)
            assert writer.returncode == 0, err.decode()
            assert out.decode() == FIRST + REST + "\n"  # its stdout, a pipe: the answer only
        finally:
            at_tag.set()
            at_rest.set()
            if writer.poll() is None:
                writer.kill()
                writer.wait()
        wait_turn_over(page, FIRST + REST)
