"""The web face continues a stored session as the other faces do: in the window its server
reports now when the server gave the recorded one (a real HTTP stand-in on 127.0.0.1 answering
``GET /props`` as llama.cpp does), and saying what its flags change of the session's recorded
settings when a turn logs it, not for a prompt refused before anything is logged."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dsh.agent import session_settings
from dsh.agent.runtime import Route
from dsh.config import CompactionSettings, ProviderSettings, Settings, ToolSettings
from dsh.events import RequestContextEvent, SessionSettingsEvent
from dsh.surface import Session
from dsh.web import WebRuntime
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_text
from tests.web.conftest import error_of, make_env, open_client, wait_idle
from tests.web.test_session_settings_web import session_after_one_read

FLAGS_CHANGE = "the flags change its recorded settings"


def test_a_session_continued_from_the_page_runs_in_the_window_its_server_reports_now(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = make_env(tmp_path, backend="basic")
    url = server.url + "/v1"
    settings = Settings(
        provider=ProviderSettings(name="openai-compatible", base_url=url, model="m"),
        compaction=CompactionSettings(backend="basic"),
        tools=ToolSettings(approval="auto"),
    )
    with Session.create(env.store, cwd=env.workspace) as session:  # run when it served 8,192
        recorded = session_settings.snapshot(
            settings, "openai-compatible", "m", 8192, str(env.workspace), window_asked=True
        )
        session_settings.record(session, recorded)
        sid = session.id
    server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 4096}})
    server.queue(openai_text("answered"))
    caplog.set_level(logging.WARNING, logger="dsh")
    with open_client(env, WebRuntime(settings, store=env.store)) as client:
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        assert client.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"}).status_code == 202
        info = wait_idle(client, sid)
        assert info["stats"]["contextWindow"] == 4096
    assert server.bodies[-1]["max_tokens"] == 820  # the reply bound of a 4,096 window
    warned = [r.getMessage() for r in caplog.records if "its server now reports" in r.getMessage()]
    assert warned == [
        f"session {sid}: its server now reports a 4,096-token context window for m (the "
        "session recorded 8,192); it runs and compacts in 4,096 (set --context-window or "
        "provider.context_window to choose another)"
    ]
    with Session.open(env.store, sid) as session:
        assert session.of_type(RequestContextEvent)[-1].data.context_window == 4096
        latest = session.of_type(SessionSettingsEvent)[-1].data
    assert (latest.context_window, latest.window_asked) == (4096, True)
    assert latest.compaction.chunk_tokens == 512  # the budgets follow the window


def test_the_flags_change_is_said_when_a_turn_logs_it_not_for_a_refused_prompt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env, sid = session_after_one_read(tmp_path)  # recorded in a 16,000-token window
    flags = {"provider": {"context_window": 4096}}
    today = Settings(
        provider=ProviderSettings(context_window=4096),
        compaction=CompactionSettings(backend="basic"),
        tools=ToolSettings(approval="auto"),
    )
    runtime = WebRuntime(today, Route(env.provider(), "scripted", 4096), overrides=flags)
    caplog.set_level(logging.WARNING, logger="dsh")
    with open_client(env, runtime) as client:
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        logged = env.log_lines(sid)
        refused = client.post(f"/api/sessions/{sid}/prompt", json={"text": "word " * 2400})
        assert error_of(refused) == (413, "PROMPT_TOO_LARGE")
        assert env.log_lines(sid) == logged
        assert [r for r in caplog.records if FLAGS_CHANGE in r.getMessage()] == []
        assert client.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"}).status_code == 202
        wait_idle(client, sid)
    warned = [r.getMessage() for r in caplog.records if FLAGS_CHANGE in r.getMessage()]
    assert warned == [
        f"session {sid}: {FLAGS_CHANGE}: provider.context_window 16000 -> 4096; with them: "
        "compaction.stub_tokens 160 -> 40; compaction.state_max_tokens 800 -> 204"
    ]  # the budgets scaled to the window go with it (the chunk budget was set)
    with Session.open(env.store, sid) as session:
        assert session.of_type(SessionSettingsEvent)[-1].data.context_window == 4096


def test_a_window_the_user_set_stays_when_the_page_continues_the_session_on_another_server(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A session run with ``--context-window 8000`` on another server, continued by a
    ``dsh web --base-url URL`` whose server reports no window: it runs in its 8,000 tokens
    (it used to run in the 128,000 assumed for a new session), and the turn's warning names
    the move, the only recorded value it changes."""
    env = make_env(tmp_path, backend="basic")
    url = server.url + "/v1"
    before = "http://127.0.0.1:9/v1"  # where it ran first (nothing listens there now)
    first = ProviderSettings(name="openai-compatible", base_url=before, model="m")
    with Session.create(env.store, cwd=env.workspace) as session:
        ran = Settings(provider=first, compaction=CompactionSettings(backend="basic"))
        recorded = session_settings.snapshot(
            ran, "openai-compatible", "m", 8000, str(env.workspace)
        )
        session_settings.record(session, recorded)
        sid = session.id
    flags = {"provider": {"base_url": url}}
    settings = Settings(
        provider=ProviderSettings(name="openai-compatible", base_url=url, model="m"),
        compaction=CompactionSettings(backend="basic"),
        tools=ToolSettings(approval="auto"),
    )
    server.queue(openai_text("answered"))
    caplog.set_level(logging.WARNING, logger="dsh")
    runtime = WebRuntime(settings, store=env.store, overrides=flags)
    with open_client(env, runtime) as client:
        assert client.get(f"/api/sessions/{sid}").json()["stats"]["contextWindow"] == 8000
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        assert client.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"}).status_code == 202
        info = wait_idle(client, sid)
        assert info["stats"]["contextWindow"] == 8000
    assert server.bodies[-1]["max_tokens"] == 1600  # the reply bound of an 8,000 window
    warned = [r.getMessage() for r in caplog.records if FLAGS_CHANGE in r.getMessage()]
    assert warned == [f"session {sid}: {FLAGS_CHANGE}: provider.base_url {before} -> {url}"]
    with Session.open(env.store, sid) as session:
        assert session.of_type(RequestContextEvent)[-1].data.context_window == 8000
        latest = session.of_type(SessionSettingsEvent)[-1].data
    assert (latest.context_window, latest.window_asked, latest.changed) == (
        8000,
        False,
        ("provider.base_url",),
    )
