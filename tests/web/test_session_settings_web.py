"""The web face opens a session with the settings it recorded (window, backend, budgets), not
with what this server is configured with today."""

from __future__ import annotations

from pathlib import Path

from dsh.agent.runtime import Route
from dsh.compaction import BasicBackend, CompactionEngine
from dsh.config import CompactionSettings, Settings, ToolSettings
from dsh.events import RequestContextEvent, SessionSettingsEvent
from dsh.surface import Session
from dsh.web import WebRuntime
from tests.web.conftest import READ_NOTES, WebEnv, make_env, new_session, open_client, wait_idle


def session_after_one_read(tmp_path: Path) -> tuple[WebEnv, str]:
    """A web session (basic backend, 1,200-token chunks, a 16k window) whose one turn read the
    notes, run to its end; the env is ready for another server."""
    env = make_env(tmp_path, backend="basic", chunk_tokens=1200)
    env.script = [*READ_NOTES, {"text": "again"}]
    env.window = 16_000
    with open_client(env) as client:
        sid = new_session(client)
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
        wait_idle(client, sid)
    return env, sid


def test_a_resumed_session_runs_with_its_recorded_window_backend_and_budgets(
    tmp_path: Path,
) -> None:
    env, sid = session_after_one_read(tmp_path)
    # the server now runs with another window, backend and chunk size
    today = Settings(
        compaction=CompactionSettings(backend="recallable", retain_tokens=20, chunk_tokens=4000),
        tools=ToolSettings(approval="auto"),
    )
    runtime = WebRuntime(today, Route(env.provider(), "scripted", 128_000))
    with open_client(env, runtime) as client:
        assert client.get(f"/api/sessions/{sid}").json()["stats"]["contextWindow"] == 16_000
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "once more"})
        info = wait_idle(client, sid)
        assert info["stats"]["contextWindow"] == 16_000
    with Session.open(env.store, sid) as session:
        windows = {e.data.context_window for e in session.of_type(RequestContextEvent)}
        assert windows == {16_000}  # the turn after the reopen ran in the recorded window
        assert len(session.of_type(SessionSettingsEvent)) == 1
        engine = runtime.make_engine(session)  # what a web /compact would run
    assert isinstance(engine, CompactionEngine) and isinstance(engine.backend, BasicBackend)
    assert engine.settings.chunk_tokens == 1200
