"""A page that joins a session's live stream while a model call streams (a second tab, a reload)
gets what the call streamed so far, then its deltas: the reply it assembles is the whole reply,
no piece missing or twice, for a turn run in this server and for one another process runs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from dsh.agent.runtime import Route
from dsh.events import Event
from dsh.llm.scripted import ScriptedProvider
from dsh.llm.types import ModelRequest, StreamEvent, TextDelta
from dsh.store.derived import live_text_path
from dsh.surface import Session
from dsh.web import WebRuntime
from dsh.web.live import joined_mid_call
from tests.helpers import append_chat_turn, user_message
from tests.web.conftest import WebEnv, make_env
from tests.web.test_follow_live_text import add_text, live_process, write_side_file
from tests.web.test_live import Live, Served

REPLY = " ".join(f"word{i}" for i in range(40))
HELD_AFTER = 12
"""Text pieces the model streams before it holds the rest until the test releases it."""


class HeldReply:
    """The scripted provider; its text stops after ``HELD_AFTER`` pieces until ``release`` is
    set (a thread's event: the server runs on a loop of its own)."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner, self.name = inner, inner.name
        self.release = threading.Event()

    async def stream(
        self, request: ModelRequest, *, history: Sequence[Event]
    ) -> AsyncIterator[StreamEvent]:
        pieces = 0
        async for event in self.inner.stream(request, history=history):
            if isinstance(event, TextDelta):
                if pieces == HELD_AFTER:
                    await asyncio.to_thread(self.release.wait)
                pieces += 1
            yield event


class Page:
    """A live socket read as the page reads it: the streamed tail starts over at each hello
    and ends with the call's reply (or the turn's end); each reply's tail is kept."""

    def __init__(self, live: Live) -> None:
        self.live = live
        self.tail = ""
        self.seen: set[int] = set()
        self.replies: list[tuple[str, str]] = []
        """(the tail assembled when a reply was logged, the reply's text)"""

    def read(self) -> dict[str, Any]:
        message = self.live.next()
        if message["kind"] == "hello":
            self.tail = ""
        elif message["kind"] == "delta" and message["channel"] == "text":
            self.tail += message["text"]
        elif message["kind"] == "event" and message["event"]["seq"] not in self.seen:
            event = message["event"]
            self.seen.add(event["seq"])
            if event["type"] == "assistant/message":
                blocks = event["data"]["message"]["content"]
                text = "".join(b["text"] for b in blocks if b["type"] == "text")
                self.replies.append((self.tail, text))
            if event["type"] in ("assistant/message", "turn/end"):
                self.tail = ""
        return message

    def until_tail(self, text: str) -> None:
        while self.tail != text:
            self.read()

    def until_idle(self) -> None:
        while True:
            message = self.read()
            if message["kind"] == "status" and message["running"] is None:
                return


READ_FIRST = "Let me read."
"""The text of a call before the held one, in the same turn (a tool call ends it)."""


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Served, HeldReply]]:
    env: WebEnv = make_env(tmp_path)
    read = {"name": "read_file", "arguments": {"path": "notes.txt"}}
    script = [{"text": READ_FIRST, "toolCalls": [read]}, {"text": REPLY}]
    scripted = ScriptedProvider(script, model="scripted", chunk_size=5)
    provider = HeldReply(scripted)
    runtime = WebRuntime(env.settings, Route(provider, "scripted", env.window))
    served = Served(env, runtime)
    try:
        yield served, provider
    finally:
        provider.release.set()
        served.close()


def test_a_page_joining_mid_reply_gets_the_whole_reply(held: tuple[Served, HeldReply]) -> None:
    served, provider = held
    sid = served.new_session()
    first = Page(served.live(sid, after_seq=-1))
    assert first.read()["kind"] == "hello"
    served.http.post(f"/api/sessions/{sid}/prompt", json={"text": "talk"})
    so_far = REPLY[: 5 * HELD_AFTER]
    first.until_tail(so_far)  # the model holds the rest
    last_seq = max(first.seen)
    joined = Page(served.live(sid, after_seq=last_seq))  # a second tab, or the first reloaded
    joined.until_tail(so_far)
    provider.release.set()
    first.until_idle()
    joined.until_idle()
    assert first.replies == [(READ_FIRST, READ_FIRST), (REPLY, REPLY)]
    assert joined.replies == [(REPLY, REPLY)]  # from its start, nothing twice
    # nothing of the call that ended before it joined (its text, its tool's name)
    assert not any('"channel":"tool"' in raw for raw in joined.live.raw)
    first.live.close()
    joined.live.close()


def test_a_page_joining_a_reply_another_process_streams_gets_the_whole_reply(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    writer = Session.create(env.store, cwd=env.workspace)
    sid = writer.id
    append_chat_turn(writer, "before", "ok")
    served = Served(env)
    path = live_text_path(env.store.home, sid)
    try:
        with live_process() as pid:
            first = Page(served.live(sid, after_seq=len(writer.events) - 1))
            assert first.read()["kind"] == "hello"
            prompt = writer.append(user_message("go on")).seq
            write_side_file(path, sid, prompt, pid, "Hel", "lo")
            first.until_tail("Hello")
            joined = Page(served.live(sid, after_seq=prompt))
            joined.until_tail("Hello")
            add_text(path, " world")
            first.until_tail("Hello world")
            joined.until_tail("Hello world")
            assert joined.live.raw.count('{"kind":"delta","channel":"text","text":"Hello"}') == 1
            first.live.close()
            joined.live.close()
    finally:
        writer.close()
        served.close()


def test_what_a_joining_page_gets_beside_its_catch_up() -> None:
    events = [SimpleNamespace(seq=seq) for seq in range(3, 8)]
    catch_up = cast("list[Event]", events)
    frames = ['{"kind":"delta","channel":"text","text":"Hel"}']
    # a session written here: the catch-up stops where the frames were taken, the rest follows
    assert joined_mid_call(catch_up, 2, (5, frames), exact=True) == (catch_up[:3], frames)
    # followed: the frames only with a catch-up not past them (one past may end the call)
    assert joined_mid_call(catch_up, 2, (7, frames), exact=False) == (catch_up, frames)
    assert joined_mid_call(catch_up, 2, (5, frames), exact=False) == (catch_up, [])
    # a page ahead of them (its history read later) gets none; no call: none
    assert joined_mid_call([], 9, (7, frames), exact=True) == ([], [])
    assert joined_mid_call(catch_up, 2, None, exact=True) == (catch_up, [])
