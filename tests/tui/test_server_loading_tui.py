"""The terminal UI on a server still loading its model (llama-server answers every route 503
"Loading model" while it loads a GGUF): the route is resolved off the event loop, the screen
says once that dsh waits for the server, and says when it is ready — at start, on ``/model
NAME``, and when ``/resume`` opens a session on another model. A real HTTP stand-in on
127.0.0.1 answers; ``dsh.llm.window``'s pauses are held by the test, never slept, so the wait
lasts exactly as long as the test says."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from dsh.llm import window as window_module
from dsh.tui import DshApp
from tests.agent.test_server_not_ready import LOADING
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_text
from tests.tui.conftest import SIZE, run_prompt, settle, submit
from tests.tui.test_asked_window_tui import launched
from tests.tui.test_model_list_tui import listing
from tests.tui.test_pilot import text_of
from tests.tui.test_route_flags_tui import UI

WAITING = "waiting up to 60 s for the server to load its model…"
READY = "the server answered 503 (Loading model); ready after"


@pytest.fixture
def ui(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> UI:
    return UI(tmp_path, monkeypatch)


def flat(app: DshApp) -> str:
    return " ".join(text_of(app).split())  # notes wrap at the terminal's width


class Loading:
    """The server answers 503 on ``/props`` and ``/v1/models`` until ``load`` is called; each
    of ``dsh.llm.window``'s pauses waits for that (the test's own event, in the resolving
    thread) instead of sleeping."""

    def __init__(self, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
        self.server, self.loaded, self.pauses = server, threading.Event(), 0
        self.ready: dict[str, Any] = {}
        monkeypatch.setattr(window_module, "_sleep", self._pause)

    def start(self, **ready: Any) -> None:
        """Answer 503 from now on; ``ready`` (by path) once loaded."""
        self.loaded.clear()
        self.ready = {"/" + k.replace("_", "/"): v for k, v in ready.items()}
        for path in ("/props", "/v1/models"):
            self.server.fixed[path] = LOADING

    def _pause(self, seconds: float) -> None:
        self.pauses += 1
        assert self.loaded.wait(timeout=60), "the test never loaded the model"

    def load(self) -> None:
        self.server.fixed.update(self.ready)
        self.loaded.set()


def props(window: int) -> Any:
    return json_ok({"default_generation_settings": {"n_ctx": window}})


def test_the_ui_says_it_waits_for_the_server_to_load_its_model_at_start(
    ui: UI,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``dsh --base-url URL --model m`` while the server loads: the screen is drawn, says once
    that dsh waits (the line ``dsh run`` prints), takes a draft meanwhile (queued), and once the
    model has loaded says it is ready, runs in the window the server reports and sends the
    draft."""
    ui.home(tmp_path / "home")
    loading = Loading(server, monkeypatch)
    loading.start(props=props(8192))
    server.queue(openai_text("first answer"))
    options, _ = launched(ui, "--base-url", server.url + "/v1", "--model", "m")
    app = DshApp(options)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: WAITING in flat(app))
            assert not app.ready and app.controller.route is None
            await submit(pilot, "hello")  # queued until the session is open
            await settle(pilot, lambda: app.prompt_box.queued == "hello")
            loading.load()
            await settle(pilot, lambda: READY in flat(app))
            assert WAITING not in flat(app)  # the note says it is over, not that it waits
            assert flat(app).count("Loading model") == 1  # one note, however many pauses
            await settle(pilot, lambda: "first answer" in flat(app) and not app.running)
            assert app.controller.window == 8192

    asyncio.run(main())
    assert loading.pauses >= 1


def test_model_says_it_waits_for_the_server_to_load_the_new_model(
    ui: UI,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that starts loading (the new model) while the UI runs: ``/model m2`` asks the
    new model's window off the loop and waits, saying so once; the model in use stays until
    the server is ready, then the switch and the ready line are said."""
    ui.home(tmp_path / "home")
    server.fixed["/props"] = props(8192)
    server.fixed["/v1/models"] = listing("m", "m2")
    loading = Loading(server, monkeypatch)
    options, _ = launched(ui, "--base-url", server.url + "/v1", "--model", "m")
    app = DshApp(options)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            assert loading.pauses == 0 and "Loading model" not in flat(app)
            loading.start(props=props(16384), v1_models=listing("m", "m2"))
            await submit(pilot, "/model m2")
            await settle(pilot, lambda: WAITING in flat(app))
            assert app.controller.model == "m"  # not switched while it waits
            loading.load()
            await settle(pilot, lambda: "Model for the next turns: m2." in flat(app))
            await settle(pilot, lambda: READY in flat(app))
            assert app.controller.window == 16384 and WAITING not in flat(app)

    asyncio.run(main())


def test_resume_says_it_waits_for_the_server_to_load_the_sessions_model(
    ui: UI,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/resume`` of a session recorded on another model than the UI's (no ``--model``: the
    server's one model) resolves that model's route off the loop, saying it waits while the
    server loads it, and opens the session once it is ready."""
    ui.home(tmp_path / "home")
    url = server.url + "/v1"
    server.fixed["/props"] = props(8192)
    server.fixed["/v1/models"] = listing("m3")
    server.queue(openai_text("first answer"))
    first, _ = launched(ui, "--base-url", url, "--model", "m3")
    ui.turn(first, "on m3")
    (other,) = [header.id for header in first.store.list()]
    window_module._CACHE.clear()
    server.fixed["/v1/models"] = listing("m")
    loading = Loading(server, monkeypatch)
    options, _ = launched(ui, "--base-url", url)
    app = DshApp(options)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            assert app.controller.model == "m" and loading.pauses == 0
            loading.start(props=props(4096), v1_models=listing("m"))
            await submit(pilot, f"/resume {other}")
            await settle(pilot, lambda: WAITING in flat(app))
            assert not app.ready  # a draft sent now waits for the session
            loading.load()
            await settle(pilot, lambda: f"Resumed session {other}." in flat(app))
            await settle(pilot, lambda: READY in flat(app))
            assert app.controller.model == "m3" and app.controller.window == 4096
            await run_prompt(pilot, "still there?")
            assert "second answer" in flat(app)

    server.queue(openai_text("second answer"))
    asyncio.run(main())


def test_quitting_while_the_server_loads_leaves_without_waiting_for_it(
    ui: UI,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ctrl+q while the route waits for its server: the app leaves, and the thread still
    asking the server does not hold the process (a daemon thread, not the loop's executor,
    whose threads the interpreter joins at exit: dsh would stay up to 60 s after the quit)."""
    ui.home(tmp_path / "home")
    loading = Loading(server, monkeypatch)
    loading.start(props=props(8192))
    options, _ = launched(ui, "--base-url", server.url + "/v1", "--model", "m")
    app = DshApp(options)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: WAITING in flat(app))
            await pilot.press("ctrl+q")
            await settle(pilot, lambda: not app.is_running)

    asyncio.run(main())
    (asking,) = [t for t in threading.enumerate() if t.name == "dsh-route"]
    assert asking.daemon and asking.is_alive() and app.controller.session is None
    loading.load()
    asking.join(timeout=60)
    assert not asking.is_alive() and app.controller.session is None


def test_a_server_still_loading_after_the_wait_leaves_the_model_as_it_was(
    ui: UI,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/model m2`` on a server answering 503 throughout the wait (its pauses not slept): the
    note says the server is still not ready, the error says why in one line, and the next
    turns stay on the model in use."""
    ui.home(tmp_path / "home")
    server.fixed["/props"] = props(8192)
    server.fixed["/v1/models"] = listing("m", "m2")
    options, _ = launched(ui, "--base-url", server.url + "/v1", "--model", "m")
    app = DshApp(options)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            monkeypatch.setattr(window_module, "_sleep", lambda seconds: None)
            server.fixed["/props"] = LOADING
            await submit(pilot, "/model m2")
            await settle(pilot, lambda: "error:" in flat(app))
            assert "the server answered 503 (Loading model); still not ready after" in flat(app)
            assert "is not ready: the server answered 503 (Loading model) for 60 s" in flat(app)
            assert WAITING not in flat(app) and app.controller.model == "m"

    asyncio.run(main())
