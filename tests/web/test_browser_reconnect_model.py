"""A page whose ``dsh web`` restarts with another model: once its live stream is back (the
``hello`` frame), the header's model is fetched again (``static/context.js`` ``refresh``), so
it names the model the next turn runs on before anything is sent, as a reload would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from dsh.agent.runtime import Route
from dsh.config import ProviderSettings
from dsh.llm.scripted import ScriptedProvider
from dsh.web import BackgroundServer, WebRuntime
from tests.web.builders import long_session
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import first_page_loaded

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODEL = "#model"


def test_the_header_names_the_restarted_servers_model(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    sid = long_session(env.store, env.workspace, turns=1)  # no reply comes: no refresh is due
    first = BackgroundServer(env.app()).start()
    # a refused WebSocket handshake logs a console error while the server is down: expected
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    second = None
    try:
        page.goto(f"{first.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        page.wait_for_function(
            "(sel) => document.querySelector(sel).textContent.endsWith('· scripted')", arg=MODEL
        )
        first.stop()
        page.wait_for_selector("#connection", state="visible")
        provider = ScriptedProvider(env.script, model="other-model", cache="deepseek")
        flags = {"provider": {"model": "other-model"}}  # `dsh web --model other-model`
        today = msgspec.structs.replace(
            env.settings, provider=ProviderSettings(model="other-model")
        )
        runtime = WebRuntime(today, Route(provider, "other-model", env.window), overrides=flags)
        second = BackgroundServer(env.app(runtime), port=first.port).start()
        page.wait_for_selector("#connection", state="hidden")
        page.wait_for_function(
            "(sel) => document.querySelector(sel).textContent.endsWith('· other-model')",
            arg=MODEL,
            timeout=10_000,
        )
    finally:
        if second is not None:
            second.stop()
        first.stop()
        context.close()
    assert errors == []
