"""The follower of a session another process writes publishes the text that process's model
call is streaming (its side file, ``dsh.agent.live_text``) as the ``delta`` frames a turn run
here sends: only after the events before the call, never once the call's reply is logged, and
never from a stale file (its writer gone, its call ended, another session's)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dsh.events import AssistantMessage, StepEnd, StepStart, TurnEnd, TurnEndReason, TurnStart
from dsh.store.derived import live_text_path
from dsh.surface import Session
from dsh.web.follow import Followers
from dsh.web.live import Subscriber
from tests.helpers import append_chat_turn, assistant_message, user_message
from tests.web.builders import run_apart
from tests.web.conftest import make_env


@contextmanager
def live_process() -> Iterator[int]:
    """The pid of another process, alive while the context lasts (a writer)."""
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"]) as other:
        try:
            yield other.pid
        finally:
            other.kill()


def gone_pid() -> int:
    with subprocess.Popen([sys.executable, "-c", "pass"]) as done:
        done.wait()
    return done.pid


def write_side_file(path: Path, session: str, after: int, pid: int, *texts: str) -> None:
    """A call's side file, made as its writer makes one: beside it, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"session": session, "after": after, "pid": pid, "started": 1}
    lines = [header, *({"channel": "text", "text": text} for text in texts)]
    beside = path.with_name("beside")
    beside.write_text("".join(json.dumps(line) + "\n" for line in lines))
    beside.replace(path)


def add_text(path: Path, text: str) -> None:
    with path.open("a") as file:
        file.write(json.dumps({"channel": "text", "text": text}) + "\n")


class Frames:
    """What a page subscribed to the session's hub receives, in order."""

    def __init__(self, subscriber: Subscriber) -> None:
        self.subscriber = subscriber
        self.got: list[dict[str, Any]] = []

    async def until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            message = json.loads(await asyncio.wait_for(self.subscriber.queue.get(), 30))
            self.got.append(message)
            if done(message):
                return message

    async def event(self, seq: int) -> None:
        await self.until(lambda m: m["kind"] == "event" and m["event"]["seq"] == seq)

    def deltas(self) -> str:
        return "".join(m["text"] for m in self.got if m["kind"] == "delta")

    def waiting(self) -> list[dict[str, Any]]:
        """The frames already published but not yet read (none stays unpublished within a
        poll: the follower publishes a poll's events and deltas without yielding between)."""
        messages = []
        while not self.subscriber.queue.empty():
            messages.append(json.loads(self.subscriber.queue.get_nowait() or "null"))
        self.got += messages
        return messages


def test_the_streamed_text_follows_the_events_before_its_call_and_stops_with_its_reply(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    writer = Session.create(env.store, cwd=env.workspace)
    sid = writer.id
    append_chat_turn(writer, "before", "ok")
    writer.close()
    registry = env.registry()
    path = live_text_path(env.store.home, sid)

    async def follow(pid: int) -> list[dict[str, Any]]:
        hub = registry.hub(sid)
        hub.bind_loop()
        frames = Frames(hub.subscribe())
        followers = Followers(registry)
        with Session.open(env.store, sid, writable=True) as elsewhere:
            followers.ensure(sid, len(elsewhere.events) - 1)
            await frames.event(elsewhere.append(TurnStart(turn=2)).seq)
            # the call starts after the prompt, not yet logged when its first text is on disk
            prompt = len(elsewhere.events) + 1
            write_side_file(path, sid, prompt, pid, "Hel", "lo")
            await frames.event(elsewhere.append(StepStart(turn=2, step=1)).seq)
            assert frames.deltas() == "" and frames.waiting() == []  # held: its prompt first
            assert elsewhere.append(user_message("go on")).seq == prompt
            await frames.until(lambda m: m["kind"] == "delta")
            add_text(path, " world")
            await frames.until(lambda m: m["kind"] == "delta" and m["text"] == " world")
            reply = elsewhere.append(
                AssistantMessage(turn=2, step=1, message=assistant_message("Hello world"))
            ).seq
            add_text(path, " late")  # before the writer removes the file: its call is logged
            elsewhere.append(StepEnd(turn=2, step=1))
            end = elsewhere.append(TurnEnd(turn=2, reason=TurnEndReason(kind="completed"))).seq
            await frames.event(end)
        await followers.stop()
        assert frames.waiting() == []
        seqs = [m["event"]["seq"] if m["kind"] == "event" else m["kind"] for m in frames.got]
        assert seqs.index("delta") == seqs.index(prompt) + 1
        assert seqs[seqs.index(reply) :] == [reply, reply + 1, end]  # no delta after the reply
        return frames.got

    with live_process() as pid:
        got = run_apart(follow(pid))
    deltas = [m for m in got if m["kind"] == "delta"]
    assert "".join(m["text"] for m in deltas) == "Hello world"
    assert {m["channel"] for m in deltas} == {"text"}


def test_a_stale_side_file_is_never_published(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    writer = Session.create(env.store, cwd=env.workspace)
    sid = writer.id
    append_chat_turn(writer, "before", "ok")  # a reply logged: calls before it are over
    writer.close()
    registry = env.registry()
    path = live_text_path(env.store.home, sid)

    async def follow(alive: int) -> str:
        hub = registry.hub(sid)
        hub.bind_loop()
        frames = Frames(hub.subscribe())
        followers = Followers(registry)
        with Session.open(env.store, sid, writable=True) as elsewhere:
            followers.ensure(sid, len(elsewhere.events) - 1)
            await frames.event(elsewhere.append(user_message("first")).seq)  # + session/end-seed
            last = len(elsewhere.events) - 1
            stale = [
                (sid, last, gone_pid()),  # its writer ended without removing it
                (sid, 0, alive),  # its call's reply is in the log
                ("another-session", last, alive),
            ]
            for session, after, pid in stale:
                write_side_file(path, session, after, pid, f"stale {pid} {after}")
                seq = elsewhere.append(user_message("next")).seq
                await frames.event(seq)  # the poll that published it read the file too
                assert frames.deltas() == "" and frames.waiting() == []
            last = len(elsewhere.events) - 1
            write_side_file(path, sid, last, alive, "fresh")  # the same follower shows a live one
            await frames.until(lambda m: m["kind"] == "delta")
        await followers.stop()
        return frames.deltas()

    with live_process() as pid:
        assert run_apart(follow(pid)) == "fresh"
