"""Deny with a reason in ``dsh web``: the approval answer API takes ``{answer: "deny", reason}``
(a string of at most 2,000 characters, with ``deny`` only: else a 400 in one line, the call
still asked), and the model's next request carries the reason in the call's result, as logged;
the page's "Deny with reason…" (or e) opens a one-line input whose Enter denies with it and
whose Esc goes back to the buttons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.agent.runtime import Route
from dsh.llm.scripted import ScriptedProvider
from dsh.web import BackgroundServer, WebRuntime
from tests.web.conftest import (
    WebEnv,
    error_of,
    make_env,
    new_session,
    open_client,
    wait_idle,
    wait_until,
)
from tests.web.pages import open_page, send, wait_turn_over
from tests.web.test_browser_undo import open_new_session

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCRIPT = [
    {"toolCalls": [{"name": "bash", "arguments": {"command": "rm -rf build"}}]},
    {"text": "understood"},
    {"text": "again"},
]


def denial(reason: str) -> str:
    return (
        f"bash was not run: the user denied this call and said: {reason}\n"
        "Do not retry it as is; follow what the user said."
    )


def runtime_of(env: WebEnv) -> tuple[WebRuntime, ScriptedProvider]:
    provider = ScriptedProvider(env.script, model="scripted", cache="deepseek")
    return WebRuntime(env.settings, Route(provider, "scripted", env.window)), provider


def result_text(request: Any) -> str:
    [result] = [m for m in request.messages if m.role == "tool"]
    return str(result.content[0].content[0].text)


def test_the_api_denies_with_a_reason_the_model_reads_and_refuses_a_bad_one(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = list(SCRIPT)
    runtime, provider = runtime_of(env)
    with open_client(env, runtime) as client:
        sid = new_session(client)
        assert client.post(f"/api/sessions/{sid}/prompt", json={"text": "clean"}).status_code == 202
        [asked] = wait_until(
            lambda: client.get(f"/api/sessions/{sid}").json()["approvals"], what="the approval"
        )
        path = f"/api/sessions/{sid}/approvals/{asked['id']}"
        for bad, said in [
            ({"answer": "deny", "reason": 7}, "Expected `str | null`, got `int` - at `$.reason`"),
            ({"answer": "deny", "reason": "x" * 2_001}, "Expected `str` of length <= 2000"),
            ({"answer": "once", "reason": "why"}, "a reason goes only with answer deny, not once"),
        ]:
            refused = client.post(path, json=bad)
            assert error_of(refused) == (400, "INVALID_ARGUMENT")
            message = refused.json()["error"]["message"]
            assert said in message and "\n" not in message
        assert client.get(f"/api/sessions/{sid}").json()["approvals"] == [asked]  # still asked
        typed = "use\tmake clean\ninstead\u202e\x1b please"
        answered = client.post(path, json={"answer": "deny", "reason": typed})
        assert answered.status_code == 200 and answered.json() == {"answered": "deny"}
        wait_idle(client, sid)
        said = denial("use make clean instead please")
        assert result_text(provider.requests[-1]) == said  # the model read it
        assert client.post(f"/api/sessions/{sid}/prompt", json={"text": "go"}).status_code == 202
        wait_until(lambda: len(provider.requests) == 3, what="the next request")
        wait_idle(client, sid)
        assert result_text(provider.requests[-1]) == said  # rebuilt from the log: the same
    assert not (env.workspace / "build").exists()


def test_the_page_denies_with_a_reason_typed_after_e_and_esc_goes_back(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = list(SCRIPT)
    runtime, provider = runtime_of(env)
    server = BackgroundServer(env.app(runtime)).start()
    try:
        with open_page(browser) as page:
            open_new_session(page, server.base_url)
            send(page, "clean up")
            card = page.locator("#approvals .approval")
            card.wait_for()
            page.locator("#prompt").focus()
            page.keyboard.press("Shift+Tab")  # the last control: "Deny with reason…"
            assert page.evaluate("() => document.activeElement.textContent") == (
                "Deny with reason…"
            )
            page.keyboard.press("Shift+Tab")
            assert page.evaluate("() => document.activeElement.dataset.answer") == "deny"
            page.keyboard.press("e")
            field = card.locator(".deny-reason-row input")
            field.wait_for()
            assert page.evaluate("() => document.activeElement.closest('.deny-reason-row')")
            page.keyboard.type("do not delete anything yet")  # d, o, n, e, a: typed
            page.keyboard.press("Escape")  # back to the buttons: nothing denied, the turn runs
            assert card.locator(".deny-reason-row").is_hidden()
            assert page.evaluate("() => document.activeElement.dataset.action") == "reason"
            assert page.evaluate("() => window.dsh.info.running") is not None
            card.locator("button[data-action='reason']").click()
            assert field.input_value() == "do not delete anything yet"  # kept
            field.press("End")
            page.keyboard.type(" and run make test")
            page.keyboard.press("Enter")
            card.wait_for(state="detached")
            wait_turn_over(page, "understood")
            reason = "do not delete anything yet and run make test"
            assert result_text(provider.requests[-1]) == denial(reason)
            tool_card = page.locator("#log .row.tool details.tool-card")
            tool_card.locator("> summary").click()  # opened, the card shows the denial with it
            output = tool_card.locator(".tool-result-section .tool-output")
            assert output.inner_text() == denial(reason)
    finally:
        server.stop()
    assert not (env.workspace / "build").exists()
