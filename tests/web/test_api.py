"""Every route of the JSON API and every typed error code, through Starlette's TestClient."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dsh.agent.runtime import Route
from dsh.errors import ConfigError
from dsh.surface import Session
from dsh.web import WebRuntime
from dsh.web.sessions import CANCELLED_BY_SHUTDOWN
from tests.web.conftest import (
    WebEnv,
    error_of,
    make_env,
    new_session,
    open_client,
    wait_idle,
)

# ---- sessions: list, create, info -----------------------------------------------------------


def test_create_uses_the_server_workspace_or_a_given_directory(
    client: TestClient, env: WebEnv, tmp_path: Path
) -> None:
    created = client.post("/api/sessions", json={}).json()["session"]
    assert created["cwd"] == str(env.workspace)
    assert created["open"] is True and created["lastSeq"] == -1 and created["title"] is None
    other = tmp_path / "other"
    other.mkdir()
    response = client.post("/api/sessions", json={"cwd": str(other)})
    assert response.status_code == 201
    assert response.json()["session"]["cwd"] == str(other)


@pytest.mark.parametrize(
    "body", [{"cwd": "relative/dir"}, {"cwd": "/no/such/dir"}, {"cwd": 3}, {"nope": 1}]
)
def test_create_refuses_bad_bodies(client: TestClient, body: dict[str, Any]) -> None:
    assert error_of(client.post("/api/sessions", json=body)) == (400, "INVALID_ARGUMENT")


def test_info_reports_title_stats_and_last_seq_after_a_turn(client: TestClient) -> None:
    sid = new_session(client)
    assert (
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"}).status_code == 202
    )
    info = wait_idle(client, sid)
    assert info["title"] == "read notes"
    assert info["lastSeq"] > 10
    stats = info["stats"]
    assert stats["contextWindow"] == 4000
    assert 0 < stats["contextTokens"] < 4000
    assert stats["contextRatio"] == pytest.approx(stats["contextTokens"] / 4000)
    assert 0 <= stats["cacheHitRatio"] <= 1
    assert stats["modelCalls"] == 2 and stats["turns"] == 1
    assert info["progress"] is None and info["approvals"] == []


def test_info_of_a_stored_session_not_open_here(client: TestClient, env: WebEnv) -> None:
    session = Session.create(env.store, cwd=env.workspace)
    session.close()
    info = client.get(f"/api/sessions/{session.id}").json()
    assert info["open"] is False and info["running"] is None and info["lastSeq"] == -1
    assert info["stats"]["contextWindow"] == 4000


# ---- history --------------------------------------------------------------------------------


def test_history_returns_the_exact_stored_events(client: TestClient, env: WebEnv) -> None:
    sid = new_session(client)
    client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
    wait_idle(client, sid)
    response = client.get(f"/api/sessions/{sid}/history")
    assert response.status_code == 200
    body = response.json()
    stored = [json.loads(line) for line in env.log_lines(sid)]
    assert body["events"] == stored
    assert body["hasMore"] is False and body["firstSeq"] == 0 and body["lastSeq"] == len(stored) - 1
    # byte-exact: the stored lines appear verbatim in the response body
    for line in env.log_lines(sid):
        assert line in response.content


def test_history_pages_backwards_with_before_seq(env: WebEnv) -> None:
    env.script[:] = [{"text": f"answer {i}"} for i in range(6)]
    with open_client(env) as client:
        sid = new_session(client)
        for i in range(6):
            client.post(f"/api/sessions/{sid}/prompt", json={"text": f"prompt {i}"})
            wait_idle(client, sid)
        newest = client.get(f"/api/sessions/{sid}/history?max_messages=4").json()
        older = client.get(
            f"/api/sessions/{sid}/history?max_messages=4&before_seq={newest['firstSeq']}"
        ).json()
    assert newest["hasMore"] is True
    texts = [
        e["data"]["content"][0]["text"] for e in newest["events"] if e["type"] == "user/message"
    ]
    assert texts == ["prompt 4", "prompt 5"]
    assert older["events"][-1]["seq"] == newest["firstSeq"] - 1
    assert older["lastSeq"] == newest["lastSeq"]
    seqs = [e["seq"] for e in older["events"] + newest["events"]]
    assert seqs == list(range(seqs[0], seqs[-1] + 1))


def test_history_of_a_stored_session_is_read_only(client: TestClient, env: WebEnv) -> None:
    sid = new_session(client)
    client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
    wait_idle(client, sid)
    client.post(f"/api/sessions/{sid}/close")
    body = client.get(f"/api/sessions/{sid}/history").json()
    assert [e["seq"] for e in body["events"]] == list(range(len(env.log_lines(sid))))


@pytest.mark.parametrize(
    "query",
    [
        "before_seq=abc",
        "before_seq=-1",
        "max_messages=0",
        "max_messages=501",
        "max_messages=2.5",
    ],
)
def test_history_refuses_bad_parameters(client: TestClient, query: str) -> None:
    sid = new_session(client)
    response = client.get(f"/api/sessions/{sid}/history?{query}")
    assert error_of(response) == (400, "INVALID_ARGUMENT")


# ---- unknown sessions and bad ids -----------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", ""),
        ("GET", "/history"),
        ("POST", "/resume"),
        ("POST", "/prompt"),
        ("POST", "/cancel"),
        ("POST", "/compact"),
        ("POST", "/close"),
        ("POST", "/approvals/abc"),
    ],
)
def test_unknown_session_is_404_with_a_message(client: TestClient, method: str, path: str) -> None:
    body = (
        {"text": "hi"} if path == "/prompt" else {"answer": "once"} if "approvals" in path else {}
    )
    response = client.request(method, f"/api/sessions/20990101-000000-000-abcdef{path}", json=body)
    assert error_of(response) == (404, "SESSION_NOT_FOUND")
    assert "20990101-000000-000-abcdef" in response.json()["error"]["message"]


@pytest.mark.parametrize("bad", ["a..b", "-x", "x%20y", "%2e%2e"])
def test_malformed_session_ids_are_400(client: TestClient, bad: str) -> None:
    assert error_of(client.get(f"/api/sessions/{bad}/history")) == (400, "INVALID_ARGUMENT")


def test_unknown_route_and_wrong_method(client: TestClient) -> None:
    assert error_of(client.get("/api/nothing")) == (404, "NOT_FOUND")
    sid = new_session(client)
    assert error_of(client.get(f"/api/sessions/{sid}/prompt")) == (405, "METHOD_NOT_ALLOWED")
    assert error_of(client.delete("/api/sessions")) == (405, "METHOD_NOT_ALLOWED")


# ---- bodies ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{not json", "INVALID_JSON"),
        (b"[]", "INVALID_ARGUMENT"),
        (b'{"text": 5}', "INVALID_ARGUMENT"),
        (b"{}", "INVALID_ARGUMENT"),
        (b'{"text": "hi", "extra": 1}', "INVALID_ARGUMENT"),
        (b'{"text": "   "}', "INVALID_ARGUMENT"),
    ],
)
def test_prompt_validates_its_body(client: TestClient, raw: bytes, code: str) -> None:
    sid = new_session(client)
    response = client.post(
        f"/api/sessions/{sid}/prompt", content=raw, headers={"content-type": "application/json"}
    )
    assert error_of(response) == (400, code)


def test_a_lone_surrogate_is_named_as_such_not_as_truncated_input(client: TestClient) -> None:
    sid = new_session(client)
    for raw, says in (
        (b'{"text": "a\\ud800b"}', "not valid Unicode (a lone surrogate)"),
        # the standard parser takes NaN; the place is a column, not msgspec's "(byte 9)"
        (
            b'{"text": NaN}',
            "request body is not JSON: JSON is malformed: invalid character at column 10",
        ),
    ):
        response = client.post(
            f"/api/sessions/{sid}/prompt", content=raw, headers={"content-type": "application/json"}
        )
        assert error_of(response) == (400, "INVALID_JSON")
        assert says in response.json()["error"]["message"]


def test_oversized_body_is_413(client: TestClient) -> None:
    sid = new_session(client)
    response = client.post(f"/api/sessions/{sid}/compact", json={"focus": "x" * 1_100_000})
    assert error_of(response) == (413, "PAYLOAD_TOO_LARGE")  # a prompt's: test_prompt_room_web


def test_prompt_longer_than_the_limit_is_413(client: TestClient) -> None:
    """The one limit every face applies (``dsh.agent.room.MAX_PROMPT_CHARS``), in its words."""
    sid = new_session(client)
    response = client.post(f"/api/sessions/{sid}/prompt", json={"text": "x" * 200_001})
    assert error_of(response) == (413, "PROMPT_TOO_LARGE")
    assert response.json()["error"]["message"] == (
        "the prompt is 200,001 characters; dsh takes at most 200,000: shorten it or attach the "
        "file with @path"
    )


# ---- prompt, busy, cancel -------------------------------------------------------------------


def test_prompt_runs_a_turn_in_the_background(client: TestClient, env: WebEnv) -> None:
    sid = new_session(client)
    response = client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
    assert response.status_code == 202 and response.json() == {"started": "turn"}
    wait_idle(client, sid)
    types = [json.loads(line)["type"] for line in env.log_lines(sid)]
    # the settings the session runs with are recorded before its first turn
    assert types[:2] == ["session/settings", "turn/start"] and types[-1] == "turn/end"
    assert "tool/result" in types


def test_a_second_prompt_while_running_is_409_busy(env: WebEnv) -> None:
    env.script[:] = [{"text": "slow", "delayMs": 800}, {"text": "next"}]
    with open_client(env) as c:
        sid = new_session(c)
        assert c.post(f"/api/sessions/{sid}/prompt", json={"text": "one"}).status_code == 202
        second = c.post(f"/api/sessions/{sid}/prompt", json={"text": "two"})
        assert error_of(second) == (409, "SESSION_BUSY")
        assert second.json()["error"]["running"] == "turn"
        busy_compact = c.post(f"/api/sessions/{sid}/compact", json={})
        assert error_of(busy_compact) == (409, "SESSION_BUSY")
        assert error_of(c.post(f"/api/sessions/{sid}/close")) == (409, "SESSION_BUSY")
        wait_idle(c, sid)
        assert c.post(f"/api/sessions/{sid}/prompt", json={"text": "two"}).status_code == 202
        wait_idle(c, sid)


def test_cancel_stops_the_running_turn(env: WebEnv) -> None:
    env.script[:] = [{"text": "slow", "delayMs": 5000}]
    with open_client(env) as c:
        sid = new_session(c)
        c.post(f"/api/sessions/{sid}/prompt", json={"text": "one"})
        response = c.post(f"/api/sessions/{sid}/cancel")
        assert response.status_code == 200 and response.json() == {"cancelled": "turn"}
        wait_idle(c, sid, timeout=4)
        last = json.loads(env.log_lines(sid)[-1])
        assert last["type"] == "turn/end" and last["data"]["reason"]["kind"] == "aborted"


def test_cancel_when_nothing_runs_is_409(client: TestClient) -> None:
    sid = new_session(client)
    assert error_of(client.post(f"/api/sessions/{sid}/cancel")) == (409, "NOT_RUNNING")


# ---- resume, close, lock --------------------------------------------------------------------


def test_a_stored_session_must_be_resumed_before_prompting(client: TestClient, env: WebEnv) -> None:
    session = Session.create(env.store, cwd=env.workspace)
    session.close()
    sid = session.id
    assert error_of(client.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"})) == (
        409,
        "SESSION_NOT_OPEN",
    )
    assert error_of(client.post(f"/api/sessions/{sid}/compact", json={})) == (
        409,
        "SESSION_NOT_OPEN",
    )
    resumed = client.post(f"/api/sessions/{sid}/resume")
    assert resumed.status_code == 200 and resumed.json()["session"]["open"] is True
    assert client.post(f"/api/sessions/{sid}/resume").status_code == 200  # idempotent
    assert client.post(f"/api/sessions/{sid}/prompt", json={"text": "read"}).status_code == 202
    wait_idle(client, sid)


def test_resume_of_a_session_held_elsewhere_is_409_naming_the_pid(
    client: TestClient, env: WebEnv
) -> None:
    holder = Session.create(env.store, cwd=env.workspace)  # holds the writer lock
    try:
        response = client.post(f"/api/sessions/{holder.id}/resume")
        assert error_of(response) == (409, "SESSION_LOCKED")
        error = response.json()["error"]
        assert error["holderPid"] == os.getpid()
        assert str(os.getpid()) in error["message"]
    finally:
        holder.close()
    assert client.post(f"/api/sessions/{holder.id}/resume").status_code == 200


def test_close_releases_the_lock(client: TestClient, env: WebEnv) -> None:
    sid = new_session(client)
    client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
    wait_idle(client, sid)
    assert client.post(f"/api/sessions/{sid}/close").json() == {"closed": True}
    other = Session.open(env.store, sid, writable=True)  # the lock is free again
    other.close()
    assert error_of(client.post(f"/api/sessions/{sid}/close")) == (409, "SESSION_NOT_OPEN")


def test_a_turn_running_when_the_server_stops_says_so_not_the_user(env: WebEnv) -> None:
    env.script[:] = [{"text": "far too slow", "delayMs": 3_600_000}]  # only a cancel ends it
    with open_client(env) as c:
        sid = new_session(c)
        assert c.post(f"/api/sessions/{sid}/prompt", json={"text": "one"}).status_code == 202
        deadline = time.monotonic() + 30
        while not any(b'"type":"user/message"' in line for line in env.log_lines(sid)):
            assert time.monotonic() < deadline, "the turn never began"  # its prompt is logged
            time.sleep(0.01)
    last = json.loads(env.log_lines(sid)[-1])
    assert last["type"] == "turn/end"
    assert last["data"]["reason"] == {"kind": "aborted", "error": CANCELLED_BY_SHUTDOWN}


def test_shutdown_releases_every_lock(env: WebEnv) -> None:
    with open_client(env) as c:
        sid = new_session(c)
        c.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
        wait_idle(c, sid)
    Session.open(env.store, sid, writable=True).close()


# ---- compact --------------------------------------------------------------------------------


def test_compact_runs_the_manual_command(client: TestClient, env: WebEnv) -> None:
    sid = new_session(client)
    client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
    wait_idle(client, sid)
    response = client.post(f"/api/sessions/{sid}/compact", json={"focus": "the notes"})
    assert response.status_code == 202 and response.json() == {"started": "compact"}
    info = wait_idle(client, sid)
    events = [json.loads(line) for line in env.log_lines(sid)]
    run = next(e for e in events if e["type"] == "command/run")
    done = next(e for e in events if e["type"] == "command/done")
    assert run["data"]["args"] == "the notes" and done["data"]["ok"] is True
    summary = events[done["data"]["sourceEventSeq"]]
    assert summary["type"] == "compaction/summary" and summary["data"]["kind"] == "state"
    assert info["stats"]["compactions"] >= 1


def test_compact_refuses_a_bad_focus(client: TestClient) -> None:
    sid = new_session(client)
    assert error_of(client.post(f"/api/sessions/{sid}/compact", json={"focus": 1})) == (
        400,
        "INVALID_ARGUMENT",
    )


def test_compact_with_compaction_off_is_409(tmp_path: Path) -> None:
    env = make_env(tmp_path, backend="off")
    env.script = [{"text": "hi"}]
    with open_client(env) as c:
        sid = new_session(c)
        c.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"})
        wait_idle(c, sid)
        assert error_of(c.post(f"/api/sessions/{sid}/compact", json={})) == (
            409,
            "COMPACTION_DISABLED",
        )


# ---- approvals ------------------------------------------------------------------------------


def test_answering_an_unknown_approval_is_404(client: TestClient) -> None:
    sid = new_session(client)
    response = client.post(f"/api/sessions/{sid}/approvals/nope", json={"answer": "once"})
    assert error_of(response) == (404, "APPROVAL_NOT_FOUND")


@pytest.mark.parametrize("body", [{"answer": "maybe"}, {}, {"answer": "once", "x": 1}])
def test_approval_answers_are_validated(client: TestClient, body: dict[str, Any]) -> None:
    sid = new_session(client)
    response = client.post(f"/api/sessions/{sid}/approvals/abc", json=body)
    assert error_of(response) == (400, "INVALID_ARGUMENT")


# ---- failures of the runtime and the store --------------------------------------------------


def test_a_provider_that_cannot_be_configured_is_503(env: WebEnv) -> None:
    def no_key() -> Route:
        raise ConfigError("no API key for deepseek: set DEEPSEEK_API_KEY")

    with open_client(env, WebRuntime(env.settings, no_key)) as c:
        sid = new_session(c)
        response = c.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"})
        assert error_of(response) == (503, "PROVIDER_NOT_CONFIGURED")
        assert "DEEPSEEK_API_KEY" in response.json()["error"]["message"]


def test_an_unexpected_failure_is_500_internal(env: WebEnv) -> None:
    class Broken(WebRuntime):
        def make_agent(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("boom")

    route = Route(env.provider(), "scripted", env.window)
    with open_client(env, Broken(env.settings, route), raise_server_exceptions=False) as c:
        sid = new_session(c)
        assert error_of(c.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"})) == (
            500,
            "INTERNAL",
        )


def test_a_corrupt_log_is_500_log_corrupt(client: TestClient, env: WebEnv) -> None:
    sid = new_session(client)
    client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
    wait_idle(client, sid)
    client.post(f"/api/sessions/{sid}/close")
    path = env.store.log_path(sid)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b"{garbage\n"
    path.write_bytes(b"".join(lines))
    response = client.get(f"/api/sessions/{sid}/history")
    assert error_of(response) == (500, "LOG_CORRUPT")
    assert "line" in response.json()["error"]["message"]


def test_cancel_stops_a_running_compact_and_answers_its_command(env: WebEnv) -> None:
    class SlowCompaction(WebRuntime):
        def make_engine(self, session: Session) -> Any:
            engine = super().make_engine(session)
            assert engine is not None
            summarize = engine.backend.summarize

            async def slow(plan: Any) -> Any:
                await asyncio.sleep(5)
                return await summarize(plan)

            engine.backend.summarize = slow  # type: ignore[method-assign]
            return engine

    runtime = SlowCompaction(env.settings, Route(env.provider(), "scripted", env.window))
    with open_client(env, runtime) as c:
        sid = new_session(c)
        c.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
        wait_idle(c, sid)
        assert c.post(f"/api/sessions/{sid}/compact", json={}).status_code == 202
        assert error_of(c.post(f"/api/sessions/{sid}/prompt", json={"text": "x"})) == (
            409,
            "SESSION_BUSY",
        )
        assert c.post(f"/api/sessions/{sid}/cancel").json() == {"cancelled": "compact"}
        wait_idle(c, sid, timeout=4)
        events = [json.loads(line) for line in env.log_lines(sid)]
        end = next(e for e in events if e["type"] == "compaction/end")
        assert end["data"]["error"] == "cancelled"
        assert events[-1]["type"] == "command/done"
        assert events[-1]["data"] == {
            "commandId": events[-1]["data"]["commandId"],
            "ok": False,
            "text": "Compaction cancelled.",
        }


def test_the_web_compact_engine_applies_the_routes_per_model_budgets(tmp_path: Path) -> None:
    """`/compact` in the web face compacts with the same per-model overrides as a turn."""
    from dsh.compaction import CompactionEngine
    from dsh.config import CompactionOverride, CompactionSettings, Settings
    from dsh.llm.scripted import ScriptedProvider, parse_script
    from dsh.store import MemoryStore

    compaction = CompactionSettings(
        chunk_tokens=4000,
        overrides={"scripted:tiny": CompactionOverride(chunk_tokens=1200, stub_tokens=100)},
    )
    provider = ScriptedProvider(parse_script([]), model="tiny")
    runtime = WebRuntime(Settings(compaction=compaction), Route(provider, "tiny", 8000))
    store = MemoryStore()
    session = Session.create(store, cwd=str(tmp_path))
    engine = runtime.make_engine(session)
    assert isinstance(engine, CompactionEngine)
    assert (engine.settings.chunk_tokens, engine.settings.stub_tokens) == (1200, 100)
