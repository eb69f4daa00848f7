"""``dsh web`` pins the session's plan over the composer, as the terminal UI does: the session
info carries ``plan`` (the latest ``todo_write`` list, open here or read from the store); in a
real browser the panel shows it from the live ``todo/write`` and after a reload, its head in
the terminal UI's words, and goes once every item is done."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.events import Todo
from dsh.transcript.plan import plan_head
from tests.web.conftest import make_env, new_session, open_client, wait_idle
from tests.web.pages import first_page_loaded, open_page, send, serve, wait_turn_over
from tests.web.test_browser_undo import open_new_session

ITEMS = [("read the code", "completed"), ("write tests", "in_progress"), ("ship", "pending")]


def todos(*items: tuple[str, str]) -> dict[str, Any]:
    todo = [{"content": content, "status": status} for content, status in items]
    return {"toolCalls": [{"name": "todo_write", "arguments": {"todos": todo}}]}


PLAN = todos(*ITEMS)
DONE = todos(*((content, "completed") for content, _ in ITEMS))
HEAD = plan_head([Todo(content=c, status=s) for c, s in ITEMS])  # type: ignore[arg-type]


def test_the_session_info_carries_the_plan(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [PLAN, {"text": "on it"}]
    with open_client(env) as client:
        sid = new_session(client)
        assert client.get(f"/api/sessions/{sid}").json()["plan"] == []
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "plan it"})
        wait_idle(client, sid)
        expected = [{"content": c, "status": s} for c, s in ITEMS]
        assert client.get(f"/api/sessions/{sid}").json()["plan"] == expected
        client.post(f"/api/sessions/{sid}/close")
    with open_client(env) as fresh:  # read from the store
        assert fresh.get(f"/api/sessions/{sid}").json()["plan"] == expected


def plan_text(page: Any) -> str:
    return str(page.evaluate("() => document.getElementById('plan').innerText"))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_page_pins_the_plan_until_it_is_done(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.script = [PLAN, {"text": "on it"}, DONE, {"text": "all done"}]
    with serve(env) as server, open_page(browser) as page:
        open_new_session(page, server.base_url)
        assert page.locator("#plan").is_hidden()
        send(page, "plan it")
        wait_turn_over(page, "on it")
        page.locator("#plan").wait_for(state="visible")
        assert HEAD == "plan · 1 of 3 done · now: write tests"
        lines = [line.strip() for line in plan_text(page).splitlines() if line.strip()]
        assert lines[0] == HEAD
        items = page.locator("#plan .todo").all_inner_texts()
        assert [" ".join(item.split()) for item in items] == [
            "☑ read the code",
            "◐ write tests",
            "☐ ship",
        ]
        page.reload()
        first_page_loaded(page)
        page.locator("#plan").wait_for(state="visible")  # from the session info
        assert plan_text(page).splitlines()[0].strip() == HEAD
        page.click("#plan summary")  # folded: the head alone, and it stays folded
        page.wait_for_function("() => !document.querySelector('#plan details').open")
        send(page, "finish it")
        wait_turn_over(page, "all done")
        page.locator("#plan").wait_for(state="hidden")
