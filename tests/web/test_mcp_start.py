"""The first turn in another workspace starts its MCP servers without freezing the web server:
a real uvicorn server on 127.0.0.1, a real HTTP client, and the MCP test server holding its
answer to ``initialize`` until the test lets it go."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from dsh.agent.runtime import Route
from dsh.config import McpSettings, Settings, ToolSettings
from dsh.llm.scripted import ScriptedProvider
from dsh.store import JsonlStore
from dsh.store.integrity import unseal
from dsh.tools.mcp import close_mcp_servers
from dsh.web import BackgroundServer, SessionRegistry, WebRuntime, create_app
from tests.mcp.conftest import process_is_gone, server
from tests.web.conftest import AUTH, TOKEN, wait_until

SCRIPT = [
    {"toolCalls": [{"name": "mcp__test__add", "arguments": {"a": 2, "b": 40}}]},
    {"text": "done"},
]
ADD = {"text": "add"}
ANSWER_WITHIN = 60.0
"""A bound on waiting for an answer (the old server never answered while the MCP server held)."""


def test_the_server_answers_and_runs_other_turns_while_a_workspace_s_mcp_server_starts(
    tmp_path: Path,
) -> None:
    here, other = tmp_path / "here", tmp_path / "other"
    here.mkdir()
    other.mkdir()
    (here / "hold").write_text("go")  # a server started here does not hold; in other it does
    pids = tmp_path / "pids"
    test = server(env={"MCP_TEST_HOLD_FILE": "{workspace}/hold", "MCP_TEST_STARTS_FILE": str(pids)})
    settings = Settings(
        mcp=McpSettings(servers={"test": test}),
        tools=ToolSettings(approval="auto"),
    )
    store = JsonlStore(tmp_path / "home")
    route = Route(ScriptedProvider(SCRIPT, model="scripted"), "scripted", 8000)
    registry = SessionRegistry(store, WebRuntime(settings, route), default_cwd=here)
    served = BackgroundServer(create_app(registry, token=TOKEN)).start()
    base = {"base_url": served.base_url, "headers": AUTH, "timeout": ANSWER_WITHIN}
    try:
        with (
            httpx.Client(**base) as browser,
            httpx.Client(**base) as another,
            ThreadPoolExecutor(1) as pool,
        ):

            def new_session(cwd: Path) -> str:
                made = browser.post("/api/sessions", json={"cwd": str(cwd)})
                return made.json()["session"]["id"]  # type: ignore[no-any-return]

            def idle(sid: str) -> bool:
                return another.get(f"/api/sessions/{sid}").json()["running"] is None

            first_here = new_session(here)
            assert another.post(f"/api/sessions/{first_here}/prompt", json=ADD).status_code == 202
            wait_until(lambda: idle(first_here), ANSWER_WITHIN, "the first turn here to end")
            held = new_session(other)
            prompt = pool.submit(browser.post, f"/api/sessions/{held}/prompt", json=ADD)
            waiting = other / "hold.waiting"
            wait_until(waiting.exists, ANSWER_WITHIN, "the MCP server in other to start")
            # the MCP server in other holds `initialize` now: the others are served
            listed = another.get("/api/sessions")
            assert listed.status_code == 200
            listed_ids = [row["id"] for row in listed.json()["sessions"]]
            assert first_here in listed_ids
            assert held not in listed_ids  # written once its prompt can start
            assert another.get(f"/api/sessions/{held}").status_code == 200
            second_here = new_session(here)  # a first turn too, in a workspace already started
            assert another.post(f"/api/sessions/{second_here}/prompt", json=ADD).status_code == 202
            wait_until(lambda: idle(second_here), ANSWER_WITHIN, "the second turn here to end")
            assert not prompt.done()  # the turn in other still waits for its MCP server
            (other / "hold").write_text("go")
            assert prompt.result(timeout=ANSWER_WITHIN).status_code == 202
            wait_until(lambda: idle(held), ANSWER_WITHIN, "the turn in other to end")
        for sid in (first_here, second_here, held):
            assert tool_results(store, sid) == ["42"]
    finally:
        (other / "hold").write_text("go")  # whatever happened, let the server go
        served.stop()
        close_mcp_servers()
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == 2 and all(process_is_gone(pid) for pid in started)


def tool_results(store: JsonlStore, sid: str) -> list[str]:
    lines = store.log_path(sid).read_bytes().splitlines()[1:]
    events = [json.loads(unseal(line)[0]) for line in lines]
    results = [e["data"]["message"]["content"][0] for e in events if e["type"] == "tool/result"]
    return [block["content"][0]["text"] for block in results]
