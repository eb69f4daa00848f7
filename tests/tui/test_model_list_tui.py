"""``/model`` in the terminal UI against a real OpenAI-compatible server on 127.0.0.1: the
models its ``GET /v1/models`` lists, in a picker, the one in use marked; ``/model NAME`` refused
in one line naming close matches when the server does not list it, taken with a one-line
warning when the list cannot be had (a 404, a server down, one that does not answer in time);
the list asked off the UI's thread, the keys going on meanwhile. The scripted model, with no
server to ask, takes any name at once (``tests/tui/test_model_names.py``)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from textual.widgets import OptionList

import dsh.llm.model_list
from dsh.llm.openai_compat import OpenAICompatProvider
from dsh.tui.app import DshApp
from dsh.tui.model_picker import ModelPicker
from tests.llm.fake_server import Canned, FakeServer, json_ok
from tests.tui.conftest import Rig, settle, submit
from tests.tui.test_pilot import run
from tests.tui.test_pilot import text_of as shown_text

MODELS = ["qwen2.5-coder:7b", "llama3.1:8b", "scripted"]


def listing(*names: str) -> Canned:
    return json_ok({"object": "list", "data": [{"id": n, "object": "model"} for n in names]})


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """The server, reached directly (no proxy variable in the way)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    with FakeServer() as fake:
        yield fake


def app_on(rig: Rig, base_url: str) -> DshApp:
    """The UI on a route whose provider is a real adapter at ``base_url`` (no turn is run)."""
    provider = OpenAICompatProvider("openai-compatible", "scripted", base_url, None)
    return rig.app([], wrap_provider=lambda _: provider)


def text_of(app: DshApp) -> str:
    """The transcript's text with its wrapped lines joined again."""
    return " ".join(shown_text(app).split())


def model_gets(server: FakeServer) -> list[str]:
    return [r.path for r in server.fixed_requests if r.method == "GET"]


def test_model_offers_the_listed_models_in_a_picker(rig: Rig, server: FakeServer) -> None:
    server.fixed["/v1/models"] = listing(*MODELS)
    app = app_on(rig, f"{server.url}/v1")

    async def body(pilot: Any) -> None:
        await submit(pilot, "/model")
        await settle(pilot, lambda: isinstance(app.screen, ModelPicker))
        picker = app.screen
        assert isinstance(picker, ModelPicker)
        assert picker.shown_keys == MODELS
        options = picker.query_one("#picker-rows", OptionList)
        await settle(pilot, lambda: options.highlighted == 2)  # the model in use, once mounted
        assert "Model: scripted (provider openai-compatible" in text_of(app)
        for key in "QWEN":
            await pilot.press(key)
        assert picker.shown_keys == ["qwen2.5-coder:7b"]
        await pilot.press("enter")
        await settle(pilot, lambda: "Model for the next turns: qwen2.5-coder:7b." in text_of(app))
        assert app.status_bar.info.model == "qwen2.5-coder:7b"
        await submit(pilot, "/model")  # esc closes it: nothing changes
        await settle(pilot, lambda: isinstance(app.screen, ModelPicker))
        await pilot.press("escape")
        await settle(pilot, lambda: not isinstance(app.screen, ModelPicker))
        assert app.controller.model == "qwen2.5-coder:7b"

    run(app, body)
    assert model_gets(server) == ["/v1/models", "/v1/models"]


def test_a_name_the_server_does_not_list_is_refused_naming_close_ones(
    rig: Rig, server: FakeServer
) -> None:
    server.fixed["/v1/models"] = listing(*MODELS)
    app = app_on(rig, f"{server.url}/v1")

    async def body(pilot: Any) -> None:
        await submit(pilot, "/model lama3.1:8b")
        refused = (
            "error: openai-compatible does not list the model lama3.1:8b; did you mean "
            "llama3.1:8b? (/model lists the 3 it offers)"
        )
        await settle(pilot, lambda: refused in text_of(app))
        assert app.controller.model == "scripted"
        await submit(pilot, "/model llama3.1:8b")
        await settle(pilot, lambda: "Model for the next turns: llama3.1:8b." in text_of(app))
        assert "warning" not in text_of(app)

    run(app, body)


def test_a_server_without_a_list_takes_the_name_with_a_warning(
    rig: Rig, server: FakeServer
) -> None:
    app = app_on(rig, f"{server.url}/v1")  # no /v1/models: a 404

    async def body(pilot: Any) -> None:
        await submit(pilot, "/model my-model")
        await settle(pilot, lambda: "Model for the next turns: my-model." in text_of(app))
        assert (
            "warning: could not list openai-compatible's models (the server answered 404): "
            "my-model not checked." in text_of(app)
        )
        await submit(pilot, "/model")
        await settle(pilot, lambda: "Could not list openai-compatible's models" in text_of(app))
        assert not isinstance(app.screen, ModelPicker)

    run(app, body)


def test_a_server_that_is_down_takes_the_name_with_a_warning(rig: Rig) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens there once it is closed
    app = app_on(rig, f"http://127.0.0.1:{port}/v1")

    async def body(pilot: Any) -> None:
        await submit(pilot, "/model my-model")
        await settle(pilot, lambda: "Model for the next turns: my-model." in text_of(app))
        assert "(could not connect to the server): my-model not checked." in text_of(app)

    run(app, body)


def test_the_list_is_bounded_and_the_keys_go_on_while_it_is_asked(
    rig: Rig, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dsh.llm.model_list, "LIST_TIMEOUT", 0.5)
    answer = threading.Event()
    server.fixed["/v1/models"] = Canned(
        200, {"Content-Type": "application/json"}, (b"{}",), hold=answer
    )
    app = app_on(rig, f"{server.url}/v1")

    async def body(pilot: Any) -> None:
        await submit(pilot, "/model my-model")
        await settle(pilot, lambda: model_gets(server) == ["/v1/models"])
        for key in "abc":  # the server holds its answer: the UI takes keys meanwhile
            await pilot.press(key)
        assert app.prompt_box.text == "abc"
        await settle(pilot, lambda: "Model for the next turns: my-model." in text_of(app))
        assert "(no answer" in text_of(app) and "my-model not checked." in text_of(app)
        answer.set()

    try:
        run(app, body)
    finally:
        answer.set()


def test_the_picker_marks_the_snapshot_a_name_is_the_alias_of(rig: Rig, server: FakeServer) -> None:
    server.fixed["/v1/models"] = listing("other", "scripted-20250929")  # in use: "scripted"
    app = app_on(rig, f"{server.url}/v1")

    async def body(pilot: Any) -> None:
        await submit(pilot, "/model")
        await settle(pilot, lambda: isinstance(app.screen, ModelPicker))
        picker = app.screen
        assert isinstance(picker, ModelPicker) and picker.in_use == "scripted-20250929"
        options = picker.query_one("#picker-rows", OptionList)
        await settle(pilot, lambda: options.highlighted == 1)
        await pilot.press("enter")  # the model in use, under its snapshot's name: switched to it
        await settle(pilot, lambda: app.controller.model == "scripted-20250929")

    run(app, body)
