"""A session recorded on another model than the server's has its route resolved in a worker
thread when a turn or a ``/compact`` starts on it, never on the server's event loop: while that
model's server is slow to say its window (a real HTTP stand-in on 127.0.0.1 whose ``GET /props``
answers only when the test lets it), every other request is answered; let go, the turn (or the
``/compact``) runs on that route. A missing key is still a 503 before anything starts. The
context panel tries an unresolved server route again off the loop too."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsh.agent import session_settings
from dsh.agent.runtime import Route
from dsh.agent.runtime import resolve_route as real_resolve_route
from dsh.config import CompactionSettings, ConfigError, ProviderSettings, Settings, ToolSettings
from dsh.events import AssistantMessageEvent, SessionSettingsEvent
from dsh.llm import window
from dsh.surface import Session
from dsh.web import BackgroundServer, WebRuntime
from dsh.web import runtime as web_runtime
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_text
from tests.web.conftest import AUTH, error_of, make_env, wait_idle, wait_until

KEY = "LOCAL_MODEL_KEY"
"""The variable the server's config names for its key: unset when the session is resumed."""

STARTS: dict[str, Callable[[httpx.Client, str], httpx.Response]] = {
    "turn": lambda api, sid: api.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"}),
    "compact": lambda api, sid: api.post(f"/api/sessions/{sid}/compact", json={}),
}


@pytest.mark.parametrize("what", sorted(STARTS))
def test_a_sessions_own_route_is_resolved_off_the_loop_when_it_starts_something(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    what: str,
) -> None:
    monkeypatch.setattr(window, "TIMEOUT", 300.0)  # the held answer is waited for, not dropped
    monkeypatch.delenv(KEY, raising=False)
    resolved_in: list[str] = []  # the threads routes were resolved in (the loop's: dsh-web)

    def resolve_route(*args: Any, **kwargs: Any) -> Route:
        resolved_in.append(threading.current_thread().name)
        return real_resolve_route(*args, **kwargs)

    monkeypatch.setattr(web_runtime, "resolve_route", resolve_route)
    env = make_env(tmp_path, backend="basic")
    local = ProviderSettings(name="openai-compatible", base_url=f"{server.url}/v1", model="m")
    with Session.create(env.store, cwd=env.workspace) as session:  # its window was asked
        recorded = session_settings.snapshot(
            Settings(provider=local), local.name, "m", 8192, str(env.workspace), window_asked=True
        )
        session_settings.record(session, recorded)
        sid = session.id
    answer = threading.Event()
    props = json_ok({"default_generation_settings": {"n_ctx": 32_768}})
    server.fixed["/props"] = dataclasses.replace(props, hold=answer)
    server.queue(openai_text("answered"))
    today = Settings(  # the server runs on the scripted model; a key from KEY for the others
        provider=ProviderSettings(api_key_env=KEY),
        compaction=CompactionSettings(backend="basic"),
        tools=ToolSettings(approval="auto"),
    )
    wiring = WebRuntime(today, Route(env.provider(), "scripted", 8192))
    start = STARTS[what]
    web = BackgroundServer(env.app(wiring)).start()
    try:
        with httpx.Client(base_url=web.base_url, headers=AUTH, timeout=60) as api:
            assert api.post(f"/api/sessions/{sid}/resume").status_code == 200
            refused = start(api, sid)  # no key yet: said in one line, nothing started
            assert error_of(refused) == (503, "PROVIDER_NOT_CONFIGURED")
            assert KEY in refused.json()["error"]["message"]
            monkeypatch.setenv(KEY, "local-key")
            started: list[httpx.Response] = []
            starting = threading.Thread(target=lambda: started.append(start(api, sid)))
            starting.start()
            try:
                wait_until(
                    lambda: any(r.path == "/props" for r in server.fixed_requests),
                    timeout=60,
                    what="the session's server to be asked its window",
                )
                # its server holds the answer: the loop answers the other requests meanwhile
                assert api.get("/api/sessions", timeout=30).status_code == 200
                assert api.get(f"/api/sessions/{sid}", timeout=30).status_code == 200
                assert started == []  # still waiting for the window
            finally:
                answer.set()
                starting.join(timeout=60)
            assert started[0].status_code == 202, started[0].text
            wait_idle(api, sid, timeout=60)  # type: ignore[arg-type]
    finally:
        web.stop()
    assert resolved_in and "dsh-web" not in resolved_in  # the agent, engine, record: none
    with Session.open(env.store, sid) as session:
        latest = session.of_type(SessionSettingsEvent)[-1].data
        answers = [e.data.message for e in session.of_type(AssistantMessageEvent)]
    assert (latest.provider, latest.model, latest.context_window) == (
        "openai-compatible",
        "m",
        32_768,
    )
    if what == "turn":  # it ran on the session's own route, with the key
        assert (
            len(answers) == 1 and server.requests[-1].headers["authorization"] == "Bearer local-key"
        )


class SlowToFail:
    """The server's own route, unresolvable (no key): said at once the first time it is
    resolved, then only once the test lets it (as a server asked its models at each try)."""

    def __init__(self) -> None:
        self.tries = 0
        self.entered = threading.Event()
        self.answer = threading.Event()

    def __call__(self) -> Route:
        self.tries += 1
        if self.tries > 1:
            self.entered.set()
            assert self.answer.wait(timeout=60)
        raise ConfigError("no API key for deepseek: set DEEPSEEK_API_KEY")


def test_the_context_panel_tries_the_servers_route_again_off_the_loop(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    with Session.create(env.store, cwd=env.workspace) as session:
        sid = session.id
    route = SlowToFail()
    web = BackgroundServer(env.app(WebRuntime(env.settings, route))).start()
    shown: list[httpx.Response] = []
    try:
        with httpx.Client(base_url=web.base_url, headers=AUTH, timeout=60) as api:
            asking = threading.Thread(
                target=lambda: shown.append(api.get(f"/api/sessions/{sid}/context"))
            )
            asking.start()
            try:
                assert route.entered.wait(timeout=60), "the server's route was not tried again"
                assert api.get("/api/sessions", timeout=30).status_code == 200
                assert shown == []
            finally:
                route.answer.set()
                asking.join(timeout=60)
    finally:
        web.stop()
    assert shown[0].status_code == 200 and shown[0].json()["routeNotice"] is None
