"""``/model`` in ``dsh web`` against a real OpenAI-compatible server on 127.0.0.1: ``GET …/model``
names the model with the models the server lists (the one in use marked), ``POST …/model``
refuses in one line a name it does not list, naming the closest, and takes one when the list
cannot be had (a 404) with the warning line before its note; the page shows both as notes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dsh.config import ProviderSettings
from dsh.web import BackgroundServer, WebRuntime
from tests.llm.fake_server import FakeServer, json_ok
from tests.web.conftest import WebEnv, error_of, make_env, new_session, open_client
from tests.web.pages import send
from tests.web.test_browser_undo import note_toast, open_new_session


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    with FakeServer() as fake:
        yield fake


def served_env(tmp_path: Path, server: FakeServer) -> WebEnv:
    """Sessions on the server's ``m1`` (the window set: nothing else is asked of it)."""
    env = make_env(tmp_path)
    provider = ProviderSettings(
        name="openai-compatible", base_url=f"{server.url}/v1", model="m1", context_window=8000
    )
    env.settings = msgspec.structs.replace(env.settings, provider=provider)
    return env


def listing(*names: str) -> Any:
    return json_ok({"object": "list", "data": [{"id": n} for n in names]})


def test_model_lists_and_checks_the_servers_models(tmp_path: Path, server: FakeServer) -> None:
    server.fixed["/v1/models"] = listing("m1", "m2-large")
    env = served_env(tmp_path, server)
    with open_client(env, WebRuntime(env.settings)) as client:
        sid = new_session(client)
        client.post(f"/api/sessions/{sid}/resume")
        shown = client.get(f"/api/sessions/{sid}/model").json()
        assert shown["models"] == ["m1", "m2-large"] and shown["unavailable"] is None
        assert shown["note"].splitlines()[1:] == [
            "openai-compatible lists 2 model(s) (* in use):",
            "  * m1",
            "    m2-large",
        ]
        refused = client.post(f"/api/sessions/{sid}/model", json={"name": "m2-larg"})
        assert error_of(refused) == (400, "INVALID_ARGUMENT")
        assert refused.json()["error"]["message"] == (
            "openai-compatible does not list the model m2-larg; did you mean m2-large? "
            "(/model lists the 2 it offers)"
        )
        assert client.get(f"/api/sessions/{sid}/model").json()["model"] == "m1"  # unchanged
        chosen = client.post(f"/api/sessions/{sid}/model", json={"name": "m2-large"}).json()
        assert chosen["model"] == "m2-large"
        assert chosen["note"] == (
            "Model for the next turns: m2-large. Its context window stays 8,000 tokens (set "
            "for this session)."
        )
    assert [r.path for r in server.fixed_requests] == ["/v1/models"] * 4


def test_a_name_is_taken_with_a_warning_when_there_is_no_list(
    tmp_path: Path, server: FakeServer
) -> None:
    env = served_env(tmp_path, server)  # no /v1/models: the server answers 404
    with open_client(env, WebRuntime(env.settings)) as client:
        sid = new_session(client)
        shown = client.get(f"/api/sessions/{sid}/model").json()
        assert shown["models"] is None
        assert shown["unavailable"] == "the server answered 404"
        chosen = client.post(f"/api/sessions/{sid}/model", json={"name": "any-model"}).json()
        assert chosen["note"] == (
            "warning: could not list openai-compatible's models (the server answered 404): "
            "any-model not checked.\nModel for the next turns: any-model. Its context window "
            "stays 8,000 tokens (set for this session)."
        )


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_page_shows_the_list_and_the_refusal(
    browser: Any, tmp_path: Path, server: FakeServer
) -> None:
    server.fixed["/v1/models"] = listing("m1", "m2-large")
    env = served_env(tmp_path, server)
    web = BackgroundServer(env.app(WebRuntime(env.settings))).start()
    context = browser.new_context()  # the refused POST logs a console error: expected
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        open_new_session(page, web.base_url)
        send(page, "/model")
        assert "* m1\n" in note_toast(page)
        send(page, "/model m2-larg")
        page.wait_for_function(
            "() => document.body.innerText.includes('does not list the model m2-larg')"
        )
        assert page.input_value("#prompt") == "/model m2-larg"  # refused: kept to mend
    finally:
        context.close()
        web.stop()
    assert errors == []
