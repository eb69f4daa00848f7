"""A session shown by a server that runs it in another window than the one it recorded (a
``--context-window`` flag; the config's window for one its server had reported) shows that
window at once, in the info's figures and the context report, before its next turn logs it
(``dsh.web.next_route``); and ``/model`` resolves the session's route in a worker thread, so a
server slow to say its window does not hold the others' requests."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import msgspec

from dsh.agent import session_settings
from dsh.agent.runtime import Route
from dsh.config import CompactionSettings, ConfigError, ProviderSettings, Settings, ToolSettings
from dsh.events import SessionSettingsEvent
from dsh.surface import Session
from dsh.web import BackgroundServer, WebRuntime
from tests.web.conftest import AUTH, WebEnv, make_env, open_client, wait_idle
from tests.web.test_session_settings_web import session_after_one_read


def shown_windows(client: object, sid: str) -> tuple[int, int]:
    """The window the info's figures and the context report measure against."""
    info = client.get(f"/api/sessions/{sid}").json()  # type: ignore[attr-defined]
    context = client.get(f"/api/sessions/{sid}/context").json()  # type: ignore[attr-defined]
    return info["stats"]["contextWindow"], context["window"]


def windows_recorded(env: WebEnv, sid: str) -> list[int | None]:
    with Session.open(env.store, sid) as session:
        return [e.data.context_window for e in session.of_type(SessionSettingsEvent)]


def test_a_flags_window_shows_before_the_next_turn_stored_and_resumed(tmp_path: Path) -> None:
    env, sid = session_after_one_read(tmp_path)  # recorded in a 16,000-token window
    flags = {"provider": {"context_window": 32_000}}
    today = msgspec.structs.replace(env.settings, provider=ProviderSettings(context_window=32_000))
    runtime = WebRuntime(today, Route(env.provider(), "scripted", 32_000), overrides=flags)
    with open_client(env, runtime) as client:
        assert shown_windows(client, sid) == (32_000, 32_000)  # read from the store
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        assert shown_windows(client, sid) == (32_000, 32_000)  # open here, no turn yet
        assert client.get(f"/api/sessions/{sid}/model").json()["window"] == 32_000
        assert windows_recorded(env, sid) == [16_000]  # nothing logged by showing it
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "again"})
        assert wait_idle(client, sid)["stats"]["contextWindow"] == 32_000
        assert shown_windows(client, sid) == (32_000, 32_000)
    assert windows_recorded(env, sid) == [16_000, 32_000]  # the turn ran in the one shown


def test_the_configured_window_shows_for_a_window_its_server_had_reported(
    tmp_path: Path,
) -> None:
    """A recorded window its server reported is asked again on reopen, unless the config gives
    one: this server's config does, so its next turn runs in the configured window."""
    env = make_env(tmp_path, backend="basic")
    env.script = [{"text": "ran"}]
    with Session.create(env.store, cwd=env.workspace) as session:
        recorded = session_settings.snapshot(
            env.settings, "scripted", "scripted", 8192, str(env.workspace), window_asked=True
        )
        session_settings.record(session, recorded)
        sid = session.id
    configured = Settings(
        provider=ProviderSettings(context_window=24_000),
        compaction=CompactionSettings(backend="basic"),
        tools=ToolSettings(approval="auto"),
    )
    runtime = WebRuntime(configured, Route(env.provider(), "scripted", 24_000))
    with open_client(env, runtime) as client:
        assert shown_windows(client, sid) == (24_000, 24_000)
        assert client.post(f"/api/sessions/{sid}/resume").status_code == 200
        assert shown_windows(client, sid) == (24_000, 24_000)
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"})
        wait_idle(client, sid)
    assert windows_recorded(env, sid) == [8192, 24_000]


class SlowToResolve(WebRuntime):
    """A server whose sessions on another model resolve their route slowly (as when its
    endpoint is asked its window): the first resolution finds no key, the next ones wait for
    ``release`` (``entered`` set meanwhile)."""

    def __init__(self, settings: Settings, route: Route) -> None:
        super().__init__(settings, route)
        self.tries = 0
        self.entered = threading.Event()
        self.release = threading.Event()

    def _resolve_for(self, settings: Settings) -> Route:
        self.tries += 1
        if self.tries == 1:
            raise ConfigError("no API key for that model yet")
        self.entered.set()
        assert self.release.wait(timeout=60)
        route = self._resolved()
        return Route(route.provider, settings.provider.model or "?", 16_000)


def test_model_resolves_the_sessions_route_off_the_loop(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    with Session.create(env.store, cwd=env.workspace) as session:  # on another model
        recorded = session_settings.snapshot(
            env.settings, "scripted", "other", 16_000, str(env.workspace)
        )
        session_settings.record(session, recorded)
        sid = session.id
    runtime = SlowToResolve(env.settings, Route(env.provider(), "scripted", 8192))
    server = BackgroundServer(env.app(runtime)).start()
    shown: list[httpx.Response] = []
    try:
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=30) as api:
            assert api.post(f"/api/sessions/{sid}/resume").status_code == 200  # no key yet
            asking = threading.Thread(
                target=lambda: shown.append(api.get(f"/api/sessions/{sid}/model"))
            )
            asking.start()
            try:
                assert runtime.entered.wait(timeout=30), "/model did not resolve the route again"
                # the route waits on its server: the loop answers the others meanwhile
                assert api.get("/api/warnings", timeout=10).status_code == 200
                assert api.get(f"/api/sessions/{sid}", timeout=10).status_code == 200
            finally:
                runtime.release.set()
                asking.join(timeout=30)
    finally:
        server.stop()
    assert shown[0].json()["model"] == "other" and shown[0].json()["window"] == 16_000
