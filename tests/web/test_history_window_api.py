"""``GET …/history?around_seq=`` (find's jump: a window of the log around an event) and
``?after_seq=`` (the pages after a window's end, to the session's end)."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from dsh.events import is_checkpoint_event
from dsh.surface import Session
from tests.helpers import append_chat_turn
from tests.web.builders import long_session
from tests.web.conftest import WebEnv, error_of


def chat_session(env: WebEnv, turns: int) -> tuple[str, int]:
    """A stored session of ``turns`` chat turns; (its id, its event count)."""
    session = Session(env.store.create(cwd=str(env.workspace)))
    for i in range(turns):
        append_chat_turn(session, f"question {i}", f"answer {i}")
    session.close()
    return session.id, len(session.events)


def messages(page: dict[str, Any]) -> list[str]:
    return [
        block["text"]
        for e in page["events"]
        if e["type"] == "user/message" and e["surfaceOp"] == "append"
        for block in e["data"]["content"]
    ]


def test_a_window_holds_the_event_and_pages_on_from_both_ends_to_the_whole_log(
    client: TestClient, env: WebEnv
) -> None:
    sid, count = chat_session(env, 40)
    path = f"/api/sessions/{sid}/history"
    target = next(
        e["seq"]
        for e in client.get(path, params={"max_messages": 500}).json()["events"]
        if e["type"] == "user/message" and e["data"]["content"][0]["text"] == "question 10"
    )
    window = client.get(path, params={"around_seq": target, "max_messages": 10}).json()
    assert messages(window) == [f"question {i}" for i in range(8, 13)]  # 10 messages: 5 and 5
    assert window["hasMore"] is True and window["hasLater"] is True
    assert window["lastSeq"] == count - 1
    seqs = [e["seq"] for e in window["events"]]
    assert target in seqs and seqs == list(range(seqs[0], seqs[-1] + 1))
    # later pages from its end, each right after the one before, to the session's end
    pages = [window]
    while pages[-1]["hasLater"]:
        after = pages[-1]["events"][-1]["seq"]
        pages.append(client.get(path, params={"after_seq": after, "max_messages": 10}).json())
    later = [e["seq"] for page in pages for e in page["events"]]
    assert later == list(range(seqs[0], count))
    assert messages(pages[1]) == [f"question {i}" for i in range(13, 18)]
    # and earlier ones from its start, as ever
    older = client.get(path, params={"before_seq": seqs[0], "max_messages": 10}).json()
    assert older["events"][-1]["seq"] == seqs[0] - 1


def test_a_window_near_an_end_says_so(client: TestClient, env: WebEnv) -> None:
    sid, count = chat_session(env, 12)
    path = f"/api/sessions/{sid}/history"
    first = client.get(path, params={"around_seq": 0, "max_messages": 6}).json()
    assert first["hasMore"] is False and first["hasLater"] is True
    assert first["events"][0]["seq"] == 0
    last = client.get(path, params={"around_seq": count - 1, "max_messages": 6}).json()
    assert last["hasMore"] is True and last["hasLater"] is False
    assert last["events"][-1]["seq"] == count - 1
    beyond = client.get(path, params={"around_seq": count + 50, "max_messages": 6}).json()
    assert beyond["events"] == last["events"]
    end = client.get(path, params={"after_seq": count - 1}).json()
    assert end["events"] == [] and end["hasLater"] is False
    plain = client.get(path).json()  # the newest page: nothing after it
    assert plain["hasLater"] is False


def test_a_window_at_a_compaction_marker_brings_its_summaries(
    client: TestClient, env: WebEnv
) -> None:
    sid = long_session(env.store, env.workspace, turns=30, compact_after=25)
    path = f"/api/sessions/{sid}/history"
    events = Session.open(env.store, sid).events
    checkpoint = next(e for e in events if is_checkpoint_event(e))
    window = client.get(path, params={"around_seq": checkpoint.seq, "max_messages": 2}).json()
    types = [e["type"] for e in window["events"]]
    assert "compaction/start" in types and "compaction/summary" in types
    assert checkpoint.seq in [e["seq"] for e in window["events"]]


def test_history_refuses_two_positions_in_one_line(client: TestClient, env: WebEnv) -> None:
    sid, _ = chat_session(env, 2)
    path = f"/api/sessions/{sid}/history"
    both = client.get(path, params={"around_seq": 1, "before_seq": 3})
    assert error_of(both) == (400, "INVALID_ARGUMENT")
    assert "at most one of" in both.json()["error"]["message"]
    assert error_of(client.get(path, params={"after_seq": -2}))[0] == 400
    assert error_of(client.get(path, params={"around_seq": "x"}))[0] == 400
