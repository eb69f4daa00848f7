"""The side file the text of a running model call crosses processes through
(``dsh.agent.live_text``): a tail reads the writer's deltas in order, a new call's file replaces
the old one whole, a line still being written waits for its newline, the log never holds a
delta, and a home that cannot be written fails nothing and warns once."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path

import pytest

from dsh.agent import live_text
from dsh.agent.live_text import LiveTextTail, share_stream
from dsh.llm.types import Finish, ReasoningDelta, StreamEvent, TextDelta, ToolCallDelta
from dsh.store import JsonlStore, MemoryStore
from dsh.store.derived import live_text_path
from dsh.store.live_file import Delta, LiveCall
from dsh.surface import Session
from tests.helpers import append_chat_turn


def merged(deltas: list[Delta]) -> list[Delta]:
    """Neighbouring text (reasoning) pieces joined: the writer batches them as it likes."""
    out: list[Delta] = []
    for channel, text in deltas:
        if out and out[-1][0] == channel and channel != "tool":
            out[-1] = (channel, out[-1][1] + text)
        else:
            out.append((channel, text))
    return out


def test_a_tail_reads_the_calls_deltas_in_order_and_the_log_holds_none(tmp_path: Path) -> None:
    home = tmp_path / "home"
    session = Session.create(JsonlStore(home), cwd=tmp_path)
    append_chat_turn(session, "earlier", "ok")
    logged = len(session.events)
    passed_on: list[StreamEvent] = []
    stream = share_stream(session, home, passed_on.append)
    tail = LiveTextTail(live_text_path(home, session.id))
    assert tail.read() == (None, [])
    sent: list[StreamEvent] = [
        TextDelta("Hel"),
        TextDelta("lo"),
        ReasoningDelta("think"),
        TextDelta(" there"),
        ToolCallDelta(0, id="c1", name="bash"),
        ToolCallDelta(0, arguments='{"command": "ls"}'),  # no name: nothing shown
        ToolCallDelta(1, id="c2", name="read_file"),
        Finish("tool-calls"),
    ]
    expected = [
        ("text", "Hello"),
        ("reasoning", "think"),
        ("text", " there"),
        ("tool", "bash"),
        ("tool", "read_file"),
    ]

    async def stream_and_read() -> tuple[LiveCall | None, list[Delta]]:
        for event in sent:  # on a loop: batched, written by the flush timer
            stream(event)
        got: list[Delta] = []
        while merged(got) != expected:
            call, deltas = tail.read()
            got += deltas
            await asyncio.sleep(0.01)
        return call, got

    call, _ = asyncio.run(asyncio.wait_for(stream_and_read(), 30))
    assert call == LiveCall(session.id, logged - 1, os.getpid(), call.started)
    assert passed_on == sent  # the face's own listener hears every event as before
    assert len(session.events) == logged  # nothing streamed is logged
    session.close()


def test_a_logged_reply_ends_the_call_and_the_next_call_replaces_its_file_whole(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    session = Session.create(JsonlStore(home), cwd=tmp_path)
    path = live_text_path(home, session.id)
    stream = share_stream(session, home, None)
    tail = LiveTextTail(path)
    stream(TextDelta("first reply"))  # off a loop: written at once
    first, deltas = tail.read()
    assert first is not None and deltas == [("text", "first reply")]

    append_chat_turn(session, "go", "first reply")  # its reply logged: the call is over
    assert not path.exists()
    stream(TextDelta("second"))
    stream(TextDelta(" reply"))
    second, deltas = tail.read()  # the tail still held the first call's file open
    assert second is not None and second != first
    assert second.after == len(session.events) - 1 > first.after
    assert merged(deltas) == [("text", "second reply")]  # from the new call's start, only it
    lines = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert lines[0]["after"] == second.after
    assert "".join(line["text"] for line in lines[1:]) == "second reply"

    # a file a crashed writer left is replaced whole by the next call, not appended to
    append_chat_turn(session, "again", "second reply")
    path.write_bytes(b'{"session": "old", "after": 0, "pid": 1, "started": 1}\n{"text": "x"}\n')
    stream(TextDelta("third"))
    lines = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert lines[0]["after"] == len(session.events) - 1 and lines[1:] == [
        {"channel": "text", "text": "third"}
    ]
    session.close()


def test_a_line_still_being_written_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "s.live"
    tail = LiveTextTail(path)
    header = json.dumps({"session": "s", "after": 4, "pid": 77, "started": 1})
    path.write_text(header[:10])
    assert tail.read() == (None, [])  # not even the call is whole yet
    with path.open("a") as file:
        file.write(header[10:] + '\n{"channel": "text", "text": "hal')
    call = LiveCall("s", 4, 77, 1)
    assert tail.read() == (call, [])
    with path.open("a") as file:
        file.write('f"}\n{"channel": "text", "text": " more"}\n')
    assert tail.read() == (call, [("text", "half"), ("text", " more")])
    assert tail.read() == (call, [])
    path.unlink()
    assert tail.read() == (None, [])


def test_a_home_that_cannot_be_written_fails_no_stream_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live_text, "_warned", False)
    home = tmp_path / "home"
    home.write_text("a file where the home should be\n")
    heard: list[StreamEvent] = []
    with caplog.at_level(logging.WARNING, logger="dsh.agent"):
        for _ in range(2):
            session = Session.create(MemoryStore(), cwd=tmp_path)
            stream = share_stream(session, home, heard.append)
            stream(TextDelta("still "))
            stream(TextDelta("streams"))
    assert [event.text for event in heard if isinstance(event, TextDelta)] == [
        "still ",
        "streams",
    ] * 2
    warned = [record for record in caplog.records if record.name == "dsh.agent"]
    assert len(warned) == 1
    assert "not shown to other processes" in warned[0].getMessage()
