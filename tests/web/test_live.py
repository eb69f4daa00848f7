"""The live stream over a real uvicorn server: exact stored events, deltas, status, stats,
compaction progress, catch-up, approvals."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from dsh.surface import Session
from dsh.web import BackgroundServer
from tests.web.conftest import AUTH, WebEnv, make_env

EVENT_PREFIX = '{"kind":"event","event":'


class Served:
    def __init__(self, env: WebEnv, runtime: Any = None) -> None:
        self.env = env
        self.server = BackgroundServer(env.app(runtime)).start()
        self.http = httpx.Client(base_url=self.server.base_url, headers=AUTH, timeout=10)

    def live(self, session_id: str, after_seq: int | None = None) -> Live:
        query = f"?after_seq={after_seq}" if after_seq is not None else ""
        url = f"ws://127.0.0.1:{self.server.port}/api/sessions/{session_id}/live{query}"
        return Live(connect(url, proxy=None, open_timeout=10, additional_headers=AUTH, legacy=True))

    def new_session(self) -> str:
        return self.http.post("/api/sessions", json={}).json()["session"]["id"]  # type: ignore[no-any-return]

    def close(self) -> None:
        self.http.close()
        self.server.stop()


class Live:
    """Frames of one live socket, read with timeouts."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.raw: list[str] = []

    def next(self, timeout: float = 10.0) -> dict[str, Any]:
        text = self.ws.recv(timeout=timeout)
        assert isinstance(text, str)
        self.raw.append(text)
        return json.loads(text)  # type: ignore[no-any-return]

    def until(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0
    ) -> list[dict[str, Any]]:
        """Frames up to and including the first that satisfies ``predicate``."""
        frames = []
        deadline = time.monotonic() + timeout
        while True:
            frame = self.next(max(0.01, deadline - time.monotonic()))
            frames.append(frame)
            if predicate(frame):
                return frames

    def close(self) -> None:
        self.ws.close()


def idle(frame: dict[str, Any]) -> bool:
    return frame["kind"] == "status" and frame["running"] is None


def turn_end(frame: dict[str, Any]) -> bool:
    return frame["kind"] == "event" and frame["event"]["type"] == "turn/end"


@pytest.fixture
def served(env: WebEnv) -> Iterator[Served]:
    s = Served(env)
    yield s
    s.close()


def test_every_event_is_pushed_as_its_exact_stored_json(served: Served, env: WebEnv) -> None:
    sid = served.new_session()
    live = served.live(sid)
    hello = live.next()
    assert hello["kind"] == "hello" and hello["session"]["id"] == sid
    served.http.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
    frames = live.until(idle)
    pushed = [raw[len(EVENT_PREFIX) : -1] for raw in live.raw if raw.startswith(EVENT_PREFIX)]
    stored = [line.decode() for line in env.log_lines(sid)]
    assert pushed == stored  # byte for byte, in log order
    kinds = [f["kind"] for f in frames]
    # the turn starts; the settings it runs with are recorded (and pushed) once its prompt
    # passed the check, before its turn/start
    assert kinds[:2] == ["status", "event"] and frames[0]["running"] == "turn"
    assert frames[1]["event"]["type"] == "session/settings"
    assert "delta" in kinds and "stats" in kinds
    deltas = [f for f in frames if f["kind"] == "delta"]
    assert {"channel": "text", "text": "Let me read the notes."} in [
        {k: f[k] for k in ("channel", "text")} for f in deltas
    ]
    assert any(f["channel"] == "reasoning" for f in deltas)
    assert any(f["channel"] == "tool" and f["text"] == "read_file" for f in deltas)
    # deltas of a step come before that step's assistant message
    first_text = kinds.index("delta")
    first_message = next(
        i
        for i, f in enumerate(frames)
        if f["kind"] == "event" and f["event"]["type"] == "assistant/message"
    )
    assert first_text < first_message
    stats = [f["stats"] for f in frames if f["kind"] == "stats"]
    assert [s["modelCalls"] for s in stats][:2] == [1, 2]  # pushed as each reply lands
    assert stats[-1]["modelCalls"] == 2 and stats[-1]["contextWindow"] == 4000
    live.close()


def test_catch_up_sends_what_happened_after_after_seq(served: Served, env: WebEnv) -> None:
    sid = served.new_session()
    served.http.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
    deadline = time.monotonic() + 10
    while served.http.get(f"/api/sessions/{sid}").json()["running"] is not None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    total = len(env.log_lines(sid))
    live = served.live(sid, after_seq=4)
    assert live.next()["kind"] == "hello"
    seqs = [live.next()["event"]["seq"] for _ in range(total - 5)]
    assert seqs == list(range(5, total))
    live.close()
    nothing = served.live(sid, after_seq=total - 1)
    assert nothing.next()["kind"] == "hello"
    with pytest.raises(TimeoutError):
        nothing.next(timeout=0.3)
    nothing.close()


def test_compaction_progress_is_pushed(served: Served, env: WebEnv) -> None:
    sid = served.new_session()
    live = served.live(sid)
    live.next()
    served.http.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
    live.until(idle)
    served.http.post(f"/api/sessions/{sid}/compact", json={})
    frames = live.until(idle)
    progress = [f["progress"] for f in frames if f["kind"] == "progress"]
    assert progress[0]["phase"] == "summarizing" and progress[0]["total"] is None
    committing = [p for p in progress if p and p["phase"] == "committing"]
    total = committing[0]["total"]
    assert total >= 1
    assert [p["done"] for p in committing] == list(range(total))
    assert progress[-1] is None
    events = [f["event"]["type"] for f in frames if f["kind"] == "event"]
    assert events[0] == "command/run" and events[-1] == "command/done"
    live.close()


def test_a_session_watched_before_it_is_resumed_streams_after_resume(
    served: Served, env: WebEnv
) -> None:
    session = Session.create(env.store, cwd=env.workspace)
    session.close()
    live = served.live(session.id, after_seq=-1)
    hello = live.next()
    assert hello["session"]["open"] is False
    assert served.http.post(f"/api/sessions/{session.id}/resume").status_code == 200
    assert live.next() == {"kind": "status", "running": None, "open": True}
    served.http.post(f"/api/sessions/{session.id}/prompt", json={"text": "read"})
    frames = live.until(turn_end)
    assert any(f["kind"] == "event" and f["event"]["type"] == "tool/result" for f in frames)
    live.close()


@pytest.mark.parametrize(
    ("path", "status"),
    [("20990101-000000-000-abcdef/live", 404), ("{sid}/live?after_seq=x&", 400)],
)
def test_live_stream_errors_are_typed(served: Served, path: str, status: int) -> None:
    sid = served.new_session()
    target = path.format(sid=sid)
    url = f"ws://127.0.0.1:{served.server.port}/api/sessions/{target}"
    with pytest.raises(InvalidStatus) as denied:
        connect(url, proxy=None, open_timeout=5, additional_headers=AUTH, legacy=True)
    assert denied.value.response.status_code == status
    body = json.loads(denied.value.response.body or b"{}")
    assert body["error"]["code"] in ("SESSION_NOT_FOUND", "INVALID_ARGUMENT")


# ---- approvals ------------------------------------------------------------------------------


def shell_script(*commands: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": c}}]} for c in commands
    ]
    return [*entries, {"text": "done"}]


@pytest.fixture
def asking(tmp_path: Path) -> Iterator[Served]:
    env = make_env(tmp_path, approval="ask")
    env.script = shell_script("echo approved-output", "echo second-call")
    s = Served(env)
    yield s
    s.close()


def approval_of(frame: dict[str, Any]) -> bool:
    return frame["kind"] == "approval"


def result_texts(frames: list[dict[str, Any]]) -> list[str]:
    return [
        f["event"]["data"]["message"]["content"][0]["content"][0]["text"]
        for f in frames
        if f["kind"] == "event" and f["event"]["type"] == "tool/result"
    ]


def test_an_approval_is_pushed_and_answered_once(asking: Served) -> None:
    sid = asking.new_session()
    live = asking.live(sid)
    live.next()
    asking.http.post(f"/api/sessions/{sid}/prompt", json={"text": "run it"})
    approval = live.until(approval_of)[-1]["approval"]
    assert approval["tool"] == "bash" and approval["args"] == {"command": "echo approved-output"}
    pending = asking.http.get(f"/api/sessions/{sid}").json()["approvals"]
    assert pending == [approval]
    answer = asking.http.post(
        f"/api/sessions/{sid}/approvals/{approval['id']}", json={"answer": "once"}
    )
    assert answer.status_code == 200 and answer.json() == {"answered": "once"}
    frames = live.until(approval_of)  # "once" does not cover the second call
    assert {"kind": "approval-resolved", "id": approval["id"], "answer": "once"} in frames
    assert "approved-output" in result_texts(frames)[0]
    second = frames[-1]["approval"]
    asking.http.post(f"/api/sessions/{sid}/approvals/{second['id']}", json={"answer": "deny"})
    frames = live.until(idle)
    denied = result_texts(frames)[0]
    assert "denied" in denied and "second-call" not in denied
    again = asking.http.post(
        f"/api/sessions/{sid}/approvals/{second['id']}", json={"answer": "once"}
    )
    assert again.status_code == 404 and again.json()["error"]["code"] == "APPROVAL_NOT_FOUND"
    live.close()


def test_always_answers_that_command_for_the_rest_of_the_session(tmp_path: Path) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = shell_script("echo approved-output", "echo approved-output", "echo other")
    served = Served(env)
    try:
        sid = served.new_session()
        live = served.live(sid)
        live.next()
        served.http.post(f"/api/sessions/{sid}/prompt", json={"text": "run it"})
        first = live.until(approval_of)[-1]["approval"]
        assert first["alwaysLabel"] == "Always allow this command"
        served.http.post(f"/api/sessions/{sid}/approvals/{first['id']}", json={"answer": "always"})
        # the same command runs unasked; another one is asked about
        frames = live.until(approval_of)
        other = frames[-1]["approval"]
        assert other["args"] == {"command": "echo other"}
        assert len(result_texts(frames)) == 2
        served.http.post(f"/api/sessions/{sid}/approvals/{other['id']}", json={"answer": "once"})
        texts = result_texts(frames + live.until(idle))
        assert "approved-output" in texts[0] and "approved-output" in texts[1]
        assert "other" in texts[2]
        live.close()
    finally:
        served.close()


def test_cancel_while_waiting_for_approval(asking: Served, tmp_path: Path) -> None:
    sid = asking.new_session()
    live = asking.live(sid)
    live.next()
    asking.http.post(f"/api/sessions/{sid}/prompt", json={"text": "run it"})
    approval = live.until(approval_of)[-1]["approval"]
    assert asking.http.post(f"/api/sessions/{sid}/cancel").json() == {"cancelled": "turn"}
    frames = live.until(idle)
    assert {"kind": "approval-resolved", "id": approval["id"], "answer": "cancelled"} in frames
    ends = [f["event"] for f in frames if f["kind"] == "event" and f["event"]["type"] == "turn/end"]
    assert ends[0]["data"]["reason"]["kind"] == "aborted"
    assert asking.http.get(f"/api/sessions/{sid}").json()["approvals"] == []
    live.close()
