"""``/model NAME`` in the real terminal UI (launched by the real command line, driven by its
pilot, against a real HTTP stand-in on 127.0.0.1 that lists its models and answers ``GET
/props`` as llama.cpp does): a window the session set stays when it moves to another model, as
it stays when a reopen's ``--model`` moves it (``dsh --resume ID`` launches on the session's
settings already: the gap was a session opened by ``/resume`` in a running UI); a window its
server gave is asked of the new
model's, and the line that says the switch says which."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.events import SessionSettingsEvent
from dsh.llm import window as window_module
from dsh.tui import DshApp
from tests.llm.conftest import server  # noqa: F401
from tests.llm.fake_server import FakeServer, json_ok, openai_text
from tests.tui.conftest import SIZE, run_prompt, settle, submit
from tests.tui.test_asked_window_tui import launched
from tests.tui.test_model_list_tui import listing, text_of
from tests.tui.test_route_flags_tui import UI


@pytest.fixture
def ui(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> UI:
    return UI(tmp_path, monkeypatch)


def props(window: int) -> Any:
    return json_ok({"default_generation_settings": {"n_ctx": window}})


def switched_and_ran(
    ui: UI, session_id: str, url: str, said: str, opened: Callable[[DshApp], None]
) -> tuple[DshApp, list[Any]]:
    """``dsh`` on ``url``'s ``m`` (no window given), ``/resume session_id`` there, ``opened``
    told of the app once it is open, ``/model m2`` until the UI says ``said``, then a turn: the
    app and the settings the session recorded."""
    options, _ = launched(ui, "--base-url", url, "--model", "m")
    app = DshApp(options)

    async def main() -> list[Any]:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.ready)
            await submit(pilot, f"/resume {session_id}")
            await settle(pilot, lambda: f"Resumed session {session_id}." in text_of(app))
            opened(app)
            await submit(pilot, "/model m2")
            await settle(pilot, lambda: said in text_of(app))
            await run_prompt(pilot, "again")
            session = app.controller.session
            assert session is not None
            return [e.data for e in session.events if isinstance(e, SessionSettingsEvent)]

    return app, asyncio.run(main())


def test_a_window_the_session_set_stays_when_model_switches_it(
    ui: UI,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """A session run with ``--context-window 8000``, opened by ``/resume`` in a ``dsh`` given
    no window (the server reporting 32,768): ``/model m2`` keeps its 8,000 tokens, as ``dsh
    --resume ID --model m2`` does (it used to ask the server and move the session to 32,768),
    and says so."""
    ui.home(tmp_path / "home")
    url = server.url + "/v1"
    server.fixed["/props"] = props(32768)
    server.fixed["/v1/models"] = listing("m", "m2")
    server.queue(openai_text("first answer"))
    first, _ = launched(ui, "--base-url", url, "--model", "m", "--context-window", "8000")
    ui.turn(first, "hello")
    (session_id,) = [header.id for header in first.store.list()]
    window_module._CACHE.clear()  # what a new process knows: nothing
    server.queue(openai_text("second answer"))
    said = "Model for the next turns: m2. Its context window stays 8,000 tokens (set for this"

    def opened(app: DshApp) -> None:
        assert app.controller.window == 8000  # the opening kept it

    app, recorded = switched_and_ran(ui, session_id, url, said, opened)
    assert app.controller.window == 8000
    assert app.status_bar.info.context_window == 8000
    assert server.bodies[-1]["model"] == "m2"
    assert server.bodies[-1]["max_tokens"] == 1600  # the reply bound of an 8,000 window
    latest = recorded[-1]
    assert (latest.model, latest.context_window, latest.window_asked) == ("m2", 8000, False)


def test_a_window_its_server_gave_is_asked_of_the_new_models_server(
    ui: UI,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """A session whose window its server gave (8,192): ``/model m2`` asks the server again and
    runs in what it says now (16,384), the line saying the window with the one it replaces."""
    ui.home(tmp_path / "home")
    url = server.url + "/v1"
    server.fixed["/props"] = props(8192)
    server.fixed["/v1/models"] = listing("m", "m2")
    server.queue(openai_text("first answer"))
    first, _ = launched(ui, "--base-url", url, "--model", "m")
    ui.turn(first, "hello")
    (session_id,) = [header.id for header in first.store.list()]
    window_module._CACHE.clear()
    server.queue(openai_text("second answer"))
    said = "Model for the next turns: m2. Context window: 16,384 tokens (was 8,192)."

    def opened(app: DshApp) -> None:
        assert app.controller.window == 8192  # asked again: the same
        server.fixed["/props"] = props(16384)  # the server restarted with a larger -c

    app, recorded = switched_and_ran(ui, session_id, url, said, opened)
    assert app.controller.window == 16384
    latest = recorded[-1]
    assert (latest.model, latest.context_window, latest.window_asked) == ("m2", 16384, True)


def test_a_window_the_session_set_is_not_asked_of_the_new_models_server(
    ui: UI,
    tmp_path: Path,
    server: FakeServer,  # noqa: F811
) -> None:
    """The session's own 8,000 tokens stay on ``/model m2``, so the server is not asked m2's
    window: no ``GET /props`` (a round trip, and a wait when the server is slow or loading)
    after the switch; only the model list ``/model`` checks the name against."""
    ui.home(tmp_path / "home")
    url = server.url + "/v1"
    server.fixed["/props"] = props(32768)
    server.fixed["/v1/models"] = listing("m", "m2")
    server.queue(openai_text("first answer"))
    first, _ = launched(ui, "--base-url", url, "--model", "m", "--context-window", "8000")
    ui.turn(first, "hello")
    (session_id,) = [header.id for header in first.store.list()]
    window_module._CACHE.clear()  # what a new process knows: nothing
    server.queue(openai_text("second answer"))
    said = "Model for the next turns: m2. Its context window stays 8,000 tokens (set for this"
    asked_from: list[int] = []

    def opened(app: DshApp) -> None:
        asked_from.append(len(server.fixed_requests))

    app, _ = switched_and_ran(ui, session_id, url, said, opened)
    asked = [r.path for r in server.fixed_requests[asked_from[0] :]]
    assert "/props" not in asked and asked.count("/v1/models") == 1
    assert app.controller.window == 8000
