"""``/model NAME`` from the page (the HTTP API, against a real HTTP stand-in on 127.0.0.1 that
lists its models and answers ``GET /props`` as llama.cpp does): a window the session set stays
when it moves to another model, as it stays when a reopen's ``--model`` moves it; a window its
server gave is asked of the new model's; the answer's note says which."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsh.agent import session_settings
from dsh.config import CompactionSettings, ProviderSettings, Settings, ToolSettings
from dsh.events import SessionSettingsEvent
from dsh.surface import Session
from dsh.web import WebRuntime
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_text
from tests.web.conftest import WebEnv, make_env, open_client, wait_idle


def props(window: int) -> Any:
    return json_ok({"default_generation_settings": {"n_ctx": window}})


def listing(*names: str) -> Any:
    return json_ok({"object": "list", "data": [{"id": n} for n in names]})


def recorded_on(env: WebEnv, url: str, window: int, *, asked: bool) -> tuple[str, Settings]:
    """A session that ran on ``url``'s ``m`` in ``window`` tokens (``asked``: its server's,
    else set), and the settings ``dsh web`` runs with now: that route, no window given."""
    settings = Settings(
        provider=ProviderSettings(name="openai-compatible", base_url=url, model="m"),
        compaction=CompactionSettings(backend="basic"),
        tools=ToolSettings(approval="auto"),
    )
    with Session.create(env.store, cwd=env.workspace) as session:
        recorded = session_settings.snapshot(
            settings, "openai-compatible", "m", window, str(env.workspace), window_asked=asked
        )
        session_settings.record(session, recorded)
        return session.id, settings


def latest(env: WebEnv, sid: str) -> tuple[str, int | None, bool | None]:
    with Session.open(env.store, sid) as session:
        data = session.of_type(SessionSettingsEvent)[-1].data
    return data.model, data.context_window, data.window_asked


def test_a_window_the_session_set_stays_when_model_switches_it(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """A session run with ``--context-window 8000``, continued by a ``dsh web`` given no window
    (its server reporting 32,768): ``/model m2`` keeps its 8,000 tokens, as a reopen with
    ``--model m2`` does (it used to take the configured window, unset, and ask the server)."""
    env = make_env(tmp_path, backend="basic")
    url = server.url + "/v1"
    sid, settings = recorded_on(env, url, 8000, asked=False)
    server.fixed["/props"] = props(32768)
    server.fixed["/v1/models"] = listing("m", "m2")
    server.queue(openai_text("answered"))
    with open_client(env, WebRuntime(settings, store=env.store)) as client:
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        assert client.get(f"/api/sessions/{sid}/model").json()["window"] == 8000
        chosen = client.post(f"/api/sessions/{sid}/model", json={"name": "m2"}).json()
        assert (chosen["model"], chosen["window"]) == ("m2", 8000)
        assert chosen["note"] == (
            "Model for the next turns: m2. Its context window stays 8,000 tokens (set for this "
            "session)."
        )
        assert client.get(f"/api/sessions/{sid}").json()["stats"]["contextWindow"] == 8000
        assert client.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"}).status_code == 202
        assert wait_idle(client, sid)["stats"]["contextWindow"] == 8000
    assert server.bodies[-1]["model"] == "m2"
    assert server.bodies[-1]["max_tokens"] == 1600  # the reply bound of an 8,000 window
    assert latest(env, sid) == ("m2", 8000, False)


def test_a_window_its_server_gave_is_asked_of_the_new_models_server(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """A session whose window its server gave (8,192): ``/model m2`` asks the server again and
    runs in what it reports now (16,384), the note saying it with the window it replaces."""
    env = make_env(tmp_path, backend="basic")
    url = server.url + "/v1"
    sid, settings = recorded_on(env, url, 8192, asked=True)
    server.fixed["/props"] = props(8192)
    server.fixed["/v1/models"] = listing("m", "m2")
    server.queue(openai_text("answered"))
    with open_client(env, WebRuntime(settings, store=env.store)) as client:
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        assert client.get(f"/api/sessions/{sid}/model").json()["window"] == 8192
        server.fixed["/props"] = props(16384)  # the server restarted with a larger -c
        chosen = client.post(f"/api/sessions/{sid}/model", json={"name": "m2"}).json()
        assert (chosen["model"], chosen["window"]) == ("m2", 16384)
        assert chosen["note"] == (
            "Model for the next turns: m2. Context window: 16,384 tokens (was 8,192)."
        )
        assert client.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"}).status_code == 202
        assert wait_idle(client, sid)["stats"]["contextWindow"] == 16384
    assert latest(env, sid) == ("m2", 16384, True)
