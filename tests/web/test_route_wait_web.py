"""While a route's server answers 503 "Loading model" (llama-server loading its model), ``dsh
web`` waits for it, as ``dsh run`` does, and now says so to the pages (``dsh.web.route_wait``):
a ``route-wait`` frame over the server's stream naming the session whose route waits, its line
cleared once the server has loaded, for each of the web's route resolutions — a new session's
first prompt on the server's route (not resolved at start), a session reopened on its recorded
route, ``/model NAME``. A real HTTP server on 127.0.0.1 answers 503, then serves; its pauses
wait for the test, not for a clock. In chromium, the page shows the line while it waits."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from websockets.sync.client import ClientConnection, connect

from dsh.agent import session_settings
from dsh.agent.runtime import Route
from dsh.config import ProviderSettings, Settings
from dsh.events import AssistantMessageEvent
from dsh.llm import window
from dsh.surface import Session
from dsh.web import BackgroundServer, WebRuntime
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import Canned, FakeServer, json_ok, openai_text
from tests.web.conftest import AUTH, TOKEN, WebEnv, make_env, wait_idle, wait_until
from tests.web.pages import open_page, send, wait_turn_over
from tests.web.real_command import dsh_web_process

LOADING = Canned(
    503,
    {"Content-Type": "application/json"},
    (b'{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}',),
)
"""llama-server's answer while it loads its model."""
SAID = "the server answered 503 (Loading model); waiting up to 60 s for the server to load"


class Loading:
    """The fake server answering 503 on the routes dsh asks a window or models at, until
    ``serve``; each pause of dsh's wait returns only once it serves (no clock involved)."""

    def __init__(self, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
        self.server = server
        self.loaded = threading.Event()
        self.pauses = 0
        monkeypatch.setattr(window, "_sleep", self._pause)
        monkeypatch.setattr(window, "_CACHE", {})  # a window asked before is asked again

    def _pause(self, _seconds: float) -> None:
        self.pauses += 1
        assert self.loaded.wait(300), "the test never let the server load"

    def start(self) -> None:
        self.loaded.clear()
        for path in ("/props", "/v1/models"):
            self.server.fixed[path] = LOADING

    def serve(self, n_ctx: int = 8192) -> None:
        self.server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": n_ctx}})
        models = [{"id": name, "object": "model"} for name in ("m", "m2")]
        self.server.fixed["/v1/models"] = json_ok({"data": models})
        self.loaded.set()


@pytest.fixture
def loading(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> Loading:  # noqa: F811
    return Loading(server, monkeypatch)


def local_settings(env: WebEnv, server: FakeServer, model: str = "m") -> Settings:  # noqa: F811
    local = ProviderSettings(name="openai-compatible", base_url=f"{server.url}/v1", model=model)
    return msgspec.structs.replace(env.settings, provider=local)


class ServerStream:
    """The server's stream (``WS /api/live``), as a page listens to it."""

    def __init__(self, port: int) -> None:
        url = f"ws://127.0.0.1:{port}/api/live"
        self.ws: ClientConnection = connect(
            url, proxy=None, open_timeout=10, additional_headers=AUTH, legacy=True
        )
        self.hello = self.next()
        assert self.hello["kind"] == "hello"

    def next(self) -> dict[str, Any]:
        return json.loads(self.ws.recv(timeout=120))  # type: ignore[no-any-return]

    def wait(self, session: str | None) -> str | None:
        """The text of the next ``route-wait`` frame (which must name ``session``)."""
        while True:
            frame = self.next()
            if frame["kind"] == "route-wait":
                assert frame["session"] == session, frame
                return frame["text"]  # type: ignore[no-any-return]


def in_thread(call: Callable[[], httpx.Response]) -> tuple[threading.Thread, list[httpx.Response]]:
    """``call`` made in a thread of its own (it waits for the route), its answer kept."""
    answers: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: answers.append(call()), daemon=True)
    thread.start()
    return thread, answers


def waited_through(
    stream: ServerStream,
    loading: Loading,
    session: str | None,
    call: Callable[[], httpx.Response],
) -> httpx.Response:
    """Make ``call`` while the server loads: its session's wait is said, then, once the server
    serves, cleared; ``call``'s answer."""
    thread, answers = in_thread(call)
    try:
        said = stream.wait(session)
        assert said is not None and SAID in said, said
        assert said.startswith(f"{loading.server.url}/v1: ")
        assert answers == []  # it waits
    finally:
        loading.serve()
        thread.join(timeout=120)
    assert stream.wait(session) is None  # the line goes when the wait does
    (answer,) = answers
    return answer


@pytest.fixture
def env(tmp_path: Path) -> WebEnv:
    return make_env(tmp_path, backend="basic")


def test_a_new_session_says_the_servers_route_is_loading(
    env: WebEnv,
    server: FakeServer,  # noqa: F811
    loading: Loading,
) -> None:
    """The server's route did not resolve at start (``dsh web`` had no page then): a new
    session resolves it, and the pages hear the wait, as the server's own (no session yet)."""
    told: list[str] = []
    runtime = WebRuntime(local_settings(env, server), store=env.store, echo_waits=told.append)
    server.queue(openai_text("loaded and answered"))
    loading.start()
    web = BackgroundServer(env.app(runtime)).start()
    try:
        stream = ServerStream(web.port)
        assert stream.hello["routeWaits"] == []
        with httpx.Client(base_url=web.base_url, headers=AUTH, timeout=120) as api:
            create = lambda: api.post("/api/sessions", json={})  # noqa: E731
            made = waited_through(stream, loading, None, create)
            assert made.status_code == 201, made.text
            sid = made.json()["session"]["id"]
            assert api.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"}).status_code == 202
            wait_idle(api, sid, timeout=120)  # type: ignore[arg-type]
        stream.ws.close()
    finally:
        web.stop()
    (line,) = told  # stderr's line, once, as dsh run prints it
    assert SAID in line
    with Session.open(env.store, sid) as session:
        replies = [e.data.message.text() for e in session.of_type(AssistantMessageEvent)]
    assert replies == ["loaded and answered"]


def test_model_name_says_the_new_models_server_is_loading(
    env: WebEnv,
    server: FakeServer,  # noqa: F811
    loading: Loading,
) -> None:
    runtime = WebRuntime(local_settings(env, server), store=env.store)
    loading.serve()
    server.queue(openai_text("first"))
    web = BackgroundServer(env.app(runtime)).start()
    try:
        stream = ServerStream(web.port)
        with httpx.Client(base_url=web.base_url, headers=AUTH, timeout=120) as api:
            sid = api.post("/api/sessions", json={}).json()["session"]["id"]
            assert api.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"}).status_code == 202
            wait_idle(api, sid, timeout=120)  # type: ignore[arg-type]
            loading.start()  # the server loads another model now
            choose = lambda: api.post(f"/api/sessions/{sid}/model", json={"name": "m2"})  # noqa: E731
            answer = waited_through(stream, loading, sid, choose)
        stream.ws.close()
    finally:
        web.stop()
    assert answer.status_code == 200, answer.text
    assert (answer.json()["model"], answer.json()["window"]) == ("m2", 8192)


def test_a_session_reopened_on_its_recorded_route_says_its_server_is_loading(
    env: WebEnv,
    server: FakeServer,  # noqa: F811
    loading: Loading,
) -> None:
    """The server runs on the scripted model; the session recorded a local server's, whose
    window it asks again as it is reopened: the page that opens it hears the wait."""
    local = local_settings(env, server)
    with Session.create(env.store, cwd=env.workspace) as session:
        recorded = session_settings.snapshot(
            local, "openai-compatible", "m", 8192, str(env.workspace), window_asked=True
        )
        session_settings.record(session, recorded)
        sid = session.id
    runtime = WebRuntime(env.settings, Route(env.provider(), "scripted", 8192), store=env.store)
    loading.start()
    web = BackgroundServer(env.app(runtime)).start()
    try:
        stream = ServerStream(web.port)
        with httpx.Client(base_url=web.base_url, headers=AUTH, timeout=120) as api:
            shown = lambda: api.get(f"/api/sessions/{sid}")  # noqa: E731
            answer = waited_through(stream, loading, sid, shown)
        stream.ws.close()
    finally:
        web.stop()
    assert answer.status_code == 200, answer.text


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_page_shows_the_wait_while_the_server_loads(
    browser: Any,
    env: WebEnv,
    server: FakeServer,  # noqa: F811
    loading: Loading,
) -> None:
    runtime = WebRuntime(local_settings(env, server), store=env.store)
    server.queue(openai_text("loaded and answered"))
    loading.start()
    web = BackgroundServer(env.app(runtime)).start()
    try:
        with open_page(browser) as page:
            page.goto(f"{web.base_url}/?token={TOKEN}")
            page.wait_for_function(
                "() => window.dsh && document.body.dataset.connection !== 'lost'"
            )
            assert page.is_hidden("#route-wait")
            page.click("#new-session")  # its window is asked of the server, which is loading
            page.wait_for_selector("#route-wait", state="visible", timeout=120_000)
            said = page.inner_text("#route-wait")
            assert SAID in said and said.startswith(f"{server.url}/v1: ")
            loading.serve()
            page.wait_for_selector("#route-wait", state="hidden", timeout=120_000)
            page.wait_for_function(
                "() => window.dsh.info && !document.getElementById('prompt').disabled"
            )
            send(page, "hi")
            wait_turn_over(page, "loaded and answered")
    finally:
        web.stop()


def test_dsh_web_says_on_stderr_that_it_waits_at_start(
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """The real ``dsh web`` resolves the route before it serves (no page yet): the line goes
    to stderr, as ``dsh run`` prints it. The server loads once the process asked its window a
    second time (so the first answer was the 503); the process then serves."""
    for path in ("/props", "/v1/models"):
        server.fixed[path] = LOADING

    def asked_twice() -> bool:
        return sum(r.path == "/props" for r in server.fixed_requests) >= 2

    def load_when_asked_again() -> None:
        wait_until(asked_twice, timeout=120, what="the window asked again")
        server.fixed["/props"] = json_ok({"default_generation_settings": {"n_ctx": 8192}})

    loader = threading.Thread(target=load_when_asked_again, daemon=True)
    loader.start()
    flags = ("--base-url", f"{server.url}/v1", "--model", "m")
    with dsh_web_process(tmp_path, flags) as web:
        loader.join(timeout=120)
        auth = {"Authorization": f"Bearer {web.token}"}
        listed = httpx.get(f"{web.base}/api/sessions", headers=auth, timeout=60)
        assert listed.status_code == 200  # it serves, on the route it waited for
    (stderr,) = web.stderr
    assert f"dsh: warning: {server.url}/v1: {SAID} its model…" in stderr, stderr
