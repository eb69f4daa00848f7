"""A write to ``.dsh/`` or ``.git/`` in ``dsh web``: asked every time even when the server runs
with approval ``auto``, saying why, with no "always" on the page and none taken by the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.web.conftest import (
    TOKEN,
    error_of,
    make_env,
    new_session,
    open_client,
    wait_idle,
    wait_until,
)
from tests.web.pages import open_page, send, serve
from tests.web.pages import wait_idle as wait_page_idle

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

WHY = "writing .dsh/config.toml changes dsh's own configuration, which can run commands"


def writes(*paths: str) -> list[dict[str, Any]]:
    calls = [
        {"toolCalls": [{"name": "write_file", "arguments": {"path": p, "content": f"# {i}\n"}}]}
        for i, p in enumerate(paths)
    ]
    return [*calls, {"text": "written"}]


def pending(client: TestClient, sid: str) -> list[dict[str, Any]]:
    return client.get(f"/api/sessions/{sid}").json()["approvals"]  # type: ignore[no-any-return]


def test_the_api_asks_each_protected_write_even_in_auto_and_takes_no_always(tmp_path: Path) -> None:
    env = make_env(tmp_path, approval="auto")
    env.script = writes("plain.txt", ".dsh/config.toml", ".git/hooks/pre-commit")
    config = env.workspace / ".dsh" / "config.toml"
    with open_client(env) as client:
        sid = new_session(client)
        assert client.post(f"/api/sessions/{sid}/prompt", json={"text": "go"}).status_code == 202
        [asked] = wait_until(lambda: pending(client, sid), what="the approval")
        assert (env.workspace / "plain.txt").exists()  # the ordinary write ran unasked
        assert asked["tool"] == "write_file" and asked["protected"] == WHY
        assert "alwaysLabel" not in asked
        always = client.post(
            f"/api/sessions/{sid}/approvals/{asked['id']}", json={"answer": "always"}
        )
        assert (
            error_of(always) == (400, "INVALID_ARGUMENT")
            and WHY in always.json()["error"]["message"]
        )
        assert pending(client, sid) == [asked] and not config.exists()  # still asked
        once = client.post(f"/api/sessions/{sid}/approvals/{asked['id']}", json={"answer": "once"})
        assert once.status_code == 200
        [hook] = wait_until(
            lambda: [a for a in pending(client, sid) if a["id"] != asked["id"]], what="the next"
        )
        assert config.read_text() == "# 1\n"
        assert hook["protected"].startswith("writing .git/hooks/pre-commit changes git's own")
        client.post(f"/api/sessions/{sid}/approvals/{hook['id']}", json={"answer": "deny"})
        wait_idle(client, sid)
    assert not (env.workspace / ".git" / "hooks" / "pre-commit").exists()


def test_the_page_says_why_and_offers_no_always_for_a_protected_write(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path, approval="ask")
    env.script = writes(".dsh/config.toml")
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        page.click("#new-session")
        page.wait_for_function("() => window.dsh.info && window.dsh.info.open")
        send(page, "configure yourself")
        approval = page.locator("#approvals .approval")
        approval.wait_for()
        assert approval.locator(".protected").inner_text() == f"Asked every time: {WHY}."
        answers = approval.locator("button[data-answer]").evaluate_all(
            "(bs) => bs.map((b) => b.dataset.answer)"
        )
        assert answers == ["once", "deny"]
        approval.locator("button[data-answer='once']").click()
        approval.wait_for(state="detached")
        wait_page_idle(page)
    assert (env.workspace / ".dsh" / "config.toml").read_text() == "# 0\n"
