"""The web face reopens a session whose recorded window is no longer valid (an older dsh
recorded the 512 tokens a server reported) with the configured one: shown, run and recorded with
it, said in one warning however often the session's settings are resolved; the log is only
appended to."""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec
import pytest

from dsh.agent import session_settings
from dsh.agent.runtime import Route
from dsh.config import CompactionSettings, Settings, ToolSettings
from dsh.events import RequestContextEvent, SessionSettingsEvent
from dsh.surface import Session
from dsh.web import WebRuntime
from tests.web.conftest import open_client, wait_idle
from tests.web.test_session_settings_web import session_after_one_read

WARNING = "recorded settings that are no longer valid"


def test_a_recorded_window_under_the_bound_gives_way_to_the_configured_one_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env, sid = session_after_one_read(tmp_path)
    with Session.open(env.store, sid, writable=True) as session:  # as an older dsh recorded it
        current = session_settings.latest(session)
        assert current is not None
        compaction = msgspec.structs.replace(current.compaction, summarizer_context_window=512)
        session.append(msgspec.structs.replace(current, context_window=512, compaction=compaction))
    log = env.store.root / sid / "session.jsonl"
    before = log.read_bytes()
    today = Settings(
        compaction=CompactionSettings(backend="basic", summarizer_context_window=8192),
        tools=ToolSettings(approval="auto"),
    )
    runtime = WebRuntime(today, Route(env.provider(), "scripted", 128_000))
    caplog.set_level(logging.WARNING, logger="dsh")
    with open_client(env, runtime) as client:
        assert client.get(f"/api/sessions/{sid}").json()["stats"]["contextWindow"] == 128_000
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "once more"})
        info = wait_idle(client, sid)
        assert info["stats"]["contextWindow"] == 128_000
    warned = [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]
    assert len(warned) == 1, warned
    assert "provider.context_window 512 -> (unset) (must be at least 4096)" in warned[0]
    assert "compaction.summarizer_context_window 512 -> 8192" in warned[0]
    assert log.read_bytes().startswith(before)
    with Session.open(env.store, sid) as session:
        contexts = session.of_type(RequestContextEvent)
        assert contexts[-1].data.context_window == 128_000  # the turn ran in the route's window
        recorded = [e.data for e in session.of_type(SessionSettingsEvent)]
    assert recorded[-2].context_window == 512  # the older record, kept
    assert recorded[-1].context_window == 128_000
    assert recorded[-1].compaction.summarizer_context_window == 8192
