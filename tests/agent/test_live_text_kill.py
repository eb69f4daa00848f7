"""``kill -9`` of a ``dsh run`` while the model's reply streams loses none of the text that had
streamed: the next writable open logs it from the call's live side file as the call's
interrupted reply, once, across more kills and opens; a side file of an earlier call is not
believed. The model is a stand-in server on 127.0.0.1 that sends part of a reply and holds the
rest; the kill comes once the side file holds the part (no sleep races it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.events import (
    AssistantMessageEvent,
    ReasoningBlock,
    RequestErrorEvent,
    TurnEndEvent,
    interruption_note,
)
from dsh.store import JsonlStore
from dsh.store.derived import live_text_path
from dsh.store.live_file import PROCESS_ENDED
from dsh.surface import Session
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer, oa_chunk, openai_stream

DSH = str(Path(sys.executable).with_name("dsh"))
FIRST = "Reading the notes first, "
SECOND = "Now the second file: "


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set when the test ends: the server's held answers end then."""
    held = threading.Event()
    yield held
    held.set()


def held_reply(text: str, release: threading.Event) -> Canned:
    reply = openai_stream(
        oa_chunk(content=text), oa_chunk(content="the rest"), oa_chunk(finish="stop")
    )
    return Canned(reply.status, reply.headers, reply.parts, hold=release, hold_before=1)


def kill_while_streaming(home: Path, workspace: Path, sid: str, url: str, text: str) -> None:
    """Run ``dsh run`` on ``sid`` and kill it (SIGKILL) once its side file holds ``text``."""
    route = ["--provider", "openai-compatible", "--base-url", url + "/v1", "--model", "q"]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    environ["DSH_HOME"] = str(home)
    live = live_text_path(home, sid)
    writer = subprocess.Popen(
        [DSH, "run", "--session", sid, *route, "read the notes"],
        env=environ, cwd=workspace, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180  # a bound for a broken build, not a timing assertion
        while True:
            try:
                if text.encode() in live.read_bytes():
                    break
            except FileNotFoundError:
                pass
            assert writer.poll() is None, writer.communicate()[1].decode()
            assert time.monotonic() < deadline, "the side file never held the streamed text"
            time.sleep(0.02)
    finally:
        writer.kill()
        writer.communicate()


def texts(session: Session) -> list[str]:
    return [e.data.message.text() for e in session.events if isinstance(e, AssistantMessageEvent)]


def test_a_killed_run_leaves_its_streamed_text_logged_once_as_the_interrupted_reply(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    release: threading.Event,
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    store = JsonlStore(home)
    session = Session.create(store, cwd=workspace)
    sid = session.id
    session.close()
    live = live_text_path(home, sid)

    server.queue(held_reply(FIRST, release))
    kill_while_streaming(home, workspace, sid, server.url, FIRST)
    first_file = tmp_path / "first.live"
    shutil.copy(live, first_file)
    session = Session.open(store, sid, writable=True)
    assert texts(session) == [FIRST]
    (reply,) = [e for e in session.events if isinstance(e, AssistantMessageEvent)]
    assert reply.data.interrupted and reply.data.error_code == PROCESS_ENDED
    error = session.events[reply.seq - 1]
    assert isinstance(error, RequestErrorEvent) and error.data.code == PROCESS_ENDED
    end = session.events[-1]
    assert isinstance(end, TurnEndEvent) and end.data.reason.kind == "interrupted"
    assert not live.exists()
    session.close()

    server.queue(held_reply(SECOND, release))
    kill_while_streaming(home, workspace, sid, server.url, SECOND)
    # the next call sent the model the recovered text as its earlier reply, marked cut off
    sent = [m for m in server.bodies[1]["messages"] if m["role"] == "assistant"]
    assert [m["content"] for m in sent] == [f"{FIRST}\n\n{interruption_note(PROCESS_ENDED)}"]
    session = Session.open(store, sid, writable=True)
    assert texts(session) == [FIRST, SECOND]
    length = len(session.events)
    session.close()

    shutil.copy(first_file, live)  # a stale file of an earlier call, which the log has ended
    session = Session.open(store, sid, writable=True)
    assert texts(session) == [FIRST, SECOND]
    assert len(session.events) == length
    assert not live.exists()
    session.close()


def test_a_killed_run_whose_text_proved_reasoning_logs_it_as_reasoning(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    release: threading.Event,
) -> None:
    """The reply wrote its reasoning as text closed by a lone ``</think>`` (its template opened
    ``<think>``): the side file says the text so far was reasoning (``was-reasoning``), so the
    reply recovered from it is split as the reply logged whole would have been."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    store = JsonlStore(home)
    session = Session.create(store, cwd=workspace)
    sid = session.id
    session.close()
    reasoning = "Okay, the notes first.\n"
    server.queue(held_reply(f"{reasoning}</think>\n\n{FIRST}", release))
    kill_while_streaming(home, workspace, sid, server.url, FIRST)
    assert b'"was-reasoning"' in live_text_path(home, sid).read_bytes()
    session = Session.open(store, sid, writable=True)
    (reply,) = [e for e in session.events if isinstance(e, AssistantMessageEvent)]
    assert reply.data.error_code == PROCESS_ENDED
    assert reply.data.message.text() == FIRST
    thought = [b.text for b in reply.data.message.content if isinstance(b, ReasoningBlock)]
    assert thought == [reasoning]
    session.close()
