"""Crash repair logs the reply a dead process was streaming, from the call's live side file
(``dsh.store.live_file``): as the call's interrupted reply (``request/error`` and
``assistant/message`` {interrupted, errorCode ``PROCESS_ENDED``}) before the turn is closed, once;
a file of another call, another session, or not of the format is not believed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from dsh.events import (
    AssistantMessageEvent,
    RequestContext,
    RequestErrorEvent,
    StepEndEvent,
    StepStart,
    TurnEndEvent,
    TurnStart,
    interruption_note,
)
from dsh.store import JsonlStore, SqliteStore
from dsh.store import live_file as live_file_module
from dsh.store.base import EventStore, now_millis
from dsh.store.derived import live_text_path
from dsh.store.live_file import PROCESS_ENDED
from dsh.surface import Session
from dsh.transcript.text import transcript_blocks
from tests.helpers import append_chat_turn, user_message

STREAMED = "The notes say three things: first"


def make_store(kind: str, home: Path) -> EventStore:
    return JsonlStore(home) if kind == "jsonl" else SqliteStore(home)


def crashed_mid_call(store: EventStore, cwd: Path) -> tuple[str, int, int]:
    """A session whose process died while its second turn's model call streamed: its id, the
    seq of the last event logged (the call's ``after``) and of the earlier turn's ``turn/end``."""
    session = Session.create(store, cwd=cwd)
    earlier = append_chat_turn(session, "earlier", "ok")
    session.append(TurnStart(turn=2))
    session.append(RequestContext(provider="openai-compatible", model="q"))
    session.append(StepStart(turn=2, step=1))
    after = session.append(user_message("read the notes")).seq
    sid = session.id
    session.close()  # a crash drops the lock with the process; closing writes nothing either
    return sid, after, earlier.turn_end


def write_live(
    home: Path,
    sid: str,
    after: int,
    deltas: list[tuple[str, str]],
    *,
    session: str | None = None,
    started: int | None = None,
    tail: bytes = b"",
) -> Path:
    path = live_text_path(home, sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    header: dict[str, Any] = {
        "session": sid if session is None else session,
        "after": after,
        "pid": 999_999,
        "started": now_millis() if started is None else started,
    }
    lines = [header, *({"channel": c, "text": t} for c, t in deltas)]
    path.write_bytes(b"".join(json.dumps(v).encode() + b"\n" for v in lines) + tail)
    return path


def replies(session: Session) -> list[AssistantMessageEvent]:
    return [e for e in session.events if isinstance(e, AssistantMessageEvent)]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_the_streamed_text_is_logged_as_the_calls_interrupted_reply_before_the_turn_closes(
    tmp_path: Path, kind: str
) -> None:
    home = tmp_path / "home"
    store = make_store(kind, home)
    sid, after, _ = crashed_mid_call(store, tmp_path)
    deltas = [("reasoning", "look at "), ("reasoning", "the notes"), ("text", STREAMED[:10])]
    deltas += [("tool", "read_file"), ("text", STREAMED[10:])]
    path = write_live(home, sid, after, deltas)
    session = Session.open(store, sid, writable=True)
    repairs = session.events[after + 1 :]
    kinds = [type(e).__name__ for e in repairs]
    assert kinds == [
        "SessionEndSeedEvent",
        "RequestErrorEvent",
        "AssistantMessageEvent",
        "StepEndEvent",
        "TurnEndEvent",
    ]
    error, reply = repairs[1], repairs[2]
    assert isinstance(error, RequestErrorEvent) and error.data.code == PROCESS_ENDED
    assert isinstance(reply, AssistantMessageEvent)
    assert (reply.data.turn, reply.data.step) == (2, 1)
    assert reply.data.interrupted and reply.data.error_code == PROCESS_ENDED
    assert reply.data.message.text() == STREAMED
    assert reply.data.message.content[0].text == "look at the notes"  # type: ignore[union-attr]
    assert reply.data.message.source.model == "q"  # type: ignore[union-attr]
    assert isinstance(repairs[3], StepEndEvent) and isinstance(repairs[4], TurnEndEvent)
    assert any("was streaming" in w for w in session.warnings)
    assert not path.exists()
    # the model is sent the recovered text, marked cut off as an in-process interrupted reply's
    cut = interruption_note(PROCESS_ENDED)
    assert session.surface.messages()[-1].text() == f"{STREAMED}\n\n{cut}"
    text = "\n".join(transcript_blocks(session.events))
    assert STREAMED in text and f"cut off: {PROCESS_ENDED}" in text
    length = len(session.events)
    session.close()
    again = Session.open(store, sid, writable=True)
    assert len(again.events) == length  # nothing more to repair, nothing logged twice
    again.close()


def test_a_kill_after_the_repair_before_the_file_went_logs_the_reply_once(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    store = JsonlStore(home)
    sid, after, _ = crashed_mid_call(store, tmp_path)
    path = write_live(home, sid, after, [("text", STREAMED)])
    kept = tmp_path / "kept.live"
    shutil.copy(path, kept)
    Session.open(store, sid, writable=True).close()
    shutil.copy(kept, path)  # what a kill between the append and the removal leaves
    session = Session.open(store, sid, writable=True)
    assert [r.data.message.text() for r in replies(session)] == ["ok", STREAMED]
    assert not path.exists()  # the log ended its call: the file is removed, not believed
    session.close()


def test_a_torn_last_line_is_dropped_and_the_whole_lines_are_recovered(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = JsonlStore(home)
    sid, after, _ = crashed_mid_call(store, tmp_path)
    write_live(home, sid, after, [("text", STREAMED)], tail=b'{"channel":"text","te')
    session = Session.open(store, sid, writable=True)
    assert replies(session)[-1].data.message.text() == STREAMED
    session.close()


@pytest.mark.parametrize(
    "case", ["earlier call", "other session", "older than its event", "damaged", "too large"]
)
def test_a_side_file_not_of_the_open_call_is_not_believed(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    store = JsonlStore(home)
    sid, after, earlier_end = crashed_mid_call(store, tmp_path)
    deltas = [("text", STREAMED)]
    if case == "earlier call":  # a call the log ended (the earlier turn's), left behind
        path = write_live(home, sid, earlier_end - 3, deltas)
    elif case == "other session":
        path = write_live(home, sid, after, deltas, session="someone-else")
    elif case == "older than its event":  # a call of another lifecycle whose seqs were cut
        path = write_live(home, sid, after, deltas, started=1)
    elif case == "damaged":
        path = write_live(home, sid, after, [*deltas, ("shout", "x")])
    else:
        monkeypatch.setattr(live_file_module, "MAX_LIVE_BYTES", 64)
        path = write_live(home, sid, after, deltas)
    session = Session.open(store, sid, writable=True)
    assert [r.data.message.text() for r in replies(session)] == ["ok"]
    assert not any(isinstance(e, RequestErrorEvent) for e in session.events)
    assert isinstance(session.events[-1], TurnEndEvent)  # the turn is closed all the same
    assert path.exists() == (case == "other session")  # a file naming the session is removed
    session.close()


@pytest.mark.parametrize(
    ("deltas", "said"),
    [
        (
            [("reasoning", "thinking about the answer")],
            "(no answer text; 25 characters of reasoning)",
        ),
        ([("reasoning", "think"), ("text", "Hello")], "(5 characters, and 5 of reasoning)"),
        ([("text", "Hello")], "(5 characters)"),
    ],
)
def test_the_repair_warning_counts_the_reasoning_it_recovered(
    tmp_path: Path, deltas: list[tuple[str, str]], said: str
) -> None:
    """A process killed while only reasoning had streamed: its reasoning is logged, and the
    warning says so instead of "(0 characters)"."""
    home = tmp_path / "home"
    store = JsonlStore(home)
    sid, after, _ = crashed_mid_call(store, tmp_path)
    write_live(home, sid, after, deltas)
    session = Session.open(store, sid, writable=True)
    (warning,) = [w for w in session.warnings if "was streaming" in w]
    assert f"as far as it had come {said}, as interrupted" in warning
    session.close()
