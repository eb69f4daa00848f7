"""``/approval`` through the API (``dsh.web.approval_mode``): ``GET …/approval`` names a
session's mode in the terminal UI's words, ``POST …/approval {mode}`` changes it for that
session (its running turn's next calls too; the same session closed and resumed here keeps it;
other sessions, the config and the log do not change), its pages hear ``approval-mode``, and
anything but ask, auto or read-only is refused in one line. Real server, keyless scripted
model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dsh.agent.runtime import Route
from dsh.web import WebRuntime
from tests.web.conftest import (
    WebEnv,
    error_of,
    make_env,
    new_session,
    open_client,
    wait_idle,
    wait_until,
)

ASKS = "Approval mode: ask (tools that change things ask first). /approval ask, auto or read-only "
ASKS += "changes it for the rest of this run."
AUTO = "Approval mode for the rest of this run: auto (every tool call runs without asking but "
AUTO += "what tools.deny_commands refuses). The config file is unchanged."


def bash_script(*commands: str) -> list[dict[str, Any]]:
    calls = [{"toolCalls": [{"name": "bash", "arguments": {"command": c}}]} for c in commands]
    return [*calls, {"text": "All done."}]


def ask_env(tmp_path: Path, *commands: str) -> WebEnv:
    env = make_env(tmp_path, approval="ask")
    env.script = bash_script(*commands)
    return env


def tool_results(env: WebEnv, sid: str) -> list[str]:
    events = [json.loads(line) for line in env.log_lines(sid)]
    results = [e["data"]["message"]["content"][0] for e in events if e["type"] == "tool/result"]
    return [block["content"][0]["text"].strip() for block in results]


def approval(client: TestClient, sid: str, mode: str | None = None) -> Any:
    if mode is None:
        return client.get(f"/api/sessions/{sid}/approval")
    return client.post(f"/api/sessions/{sid}/approval", json={"mode": mode})


def test_approval_names_the_mode_and_auto_runs_a_bash_call_unasked(tmp_path: Path) -> None:
    env = ask_env(tmp_path, "echo unasked")
    with open_client(env) as client:
        sid = new_session(client)
        assert approval(client, sid).json() == {"mode": "ask", "allow": [], "note": ASKS}
        assert client.get(f"/api/sessions/{sid}").json()["approval"] == {"mode": "ask", "allow": []}
        with client.websocket_connect(f"/api/sessions/{sid}/live") as live:
            assert live.receive_json()["kind"] == "hello"
            changed = approval(client, sid, "auto")
            assert changed.json() == {"mode": "auto", "allow": [], "note": AUTO}
            frame = live.receive_json()
        assert frame == {"kind": "approval-mode", "approval": {"mode": "auto", "allow": []}}
        assert client.get(f"/api/sessions/{sid}").json()["approval"]["mode"] == "auto"
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "run it"})
        info = wait_idle(client, sid)
        assert info["approvals"] == []
    assert tool_results(env, sid) == ["unasked"]


def test_a_mode_chosen_during_a_turn_decides_its_next_calls(tmp_path: Path) -> None:
    env = ask_env(tmp_path, "echo one", "echo two")
    with open_client(env) as client:
        sid = new_session(client)
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "run them"})

        def pending() -> list[dict[str, Any]]:
            return client.get(f"/api/sessions/{sid}").json()["approvals"]  # type: ignore[no-any-return]

        [asked] = wait_until(pending, what="the first call's approval")
        assert approval(client, sid, "auto").status_code == 200
        client.post(f"/api/sessions/{sid}/approvals/{asked['id']}", json={"answer": "once"})
        info = wait_idle(client, sid)
        assert info["approvals"] == []
    assert tool_results(env, sid) == ["one", "two"]


def test_read_only_denies_unasked_and_a_bad_mode_is_one_line_that_changes_nothing(
    tmp_path: Path,
) -> None:
    env = ask_env(tmp_path, "echo never")
    with open_client(env) as client:
        sid = new_session(client)
        refused = approval(client, sid, "yes-please\nrm -rf /")
        assert error_of(refused) == (400, "INVALID_ARGUMENT")
        message = refused.json()["error"]["message"]
        assert message == "/approval takes ask, auto or read-only, not 'yes-please rm -rf /'."
        assert approval(client, sid).json()["mode"] == "ask"
        assert approval(client, sid, "read-only").json()["mode"] == "read-only"
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "run it"})
        assert wait_idle(client, sid)["approvals"] == []
    [denied] = tool_results(env, sid)
    assert "denied by approval policy 'read-only'" in denied


def test_the_mode_is_the_session_s_for_this_server_only(tmp_path: Path) -> None:
    """Another session keeps the configured mode; the session closed and resumed here keeps
    its own; a server started again decides by the config again (nothing was recorded)."""
    env = ask_env(tmp_path)
    env.script = [{"text": "hello"}]
    with open_client(env) as client:
        sid, other = new_session(client), new_session(client)
        approval(client, sid, "auto")
        assert approval(client, other).json()["mode"] == "ask"
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"})
        wait_idle(client, sid)
        client.post(f"/api/sessions/{sid}/close")
        assert client.get(f"/api/sessions/{sid}").json()["approval"]["mode"] == "auto"
        client.post(f"/api/sessions/{sid}/resume")
        assert approval(client, sid).json()["mode"] == "auto"
    assert "approval" not in (env.store.log_path(sid).read_text())
    with open_client(env) as client:
        assert approval(client, sid).json()["mode"] == "ask"


def test_allow_flags_are_named_and_a_session_not_open_here_is_not_changed(
    tmp_path: Path,
) -> None:
    env = ask_env(tmp_path)
    env.script = [{"text": "hello"}]
    route = Route(env.provider(), "scripted", env.window)
    runtime = WebRuntime(env.settings, route, allow=frozenset({"shell", "write"}))
    with open_client(env, runtime) as client:
        sid = new_session(client)
        shown = approval(client, sid).json()
        assert shown["allow"] == ["bash", "write"]
        assert shown["note"].startswith(
            "Approval mode: ask (tools that change things ask first; --allow bash,write runs "
            "unasked). "
        )
        client.post(f"/api/sessions/{sid}/close")
        assert error_of(approval(client, sid)) == (404, "SESSION_NOT_FOUND")  # a draft: gone
        assert error_of(approval(client, "no-such-session", "auto")) == (404, "SESSION_NOT_FOUND")
    with open_client(env, WebRuntime(env.settings, route, yes=True)) as c:
        sid = new_session(c)
        assert approval(c, sid).json()["mode"] == "auto"  # dsh web --yes
        c.post(f"/api/sessions/{sid}/prompt", json={"text": "hi"})
        wait_idle(c, sid)
        c.post(f"/api/sessions/{sid}/close")
        assert error_of(approval(c, sid, "ask")) == (409, "SESSION_NOT_OPEN")


def test_a_mode_chosen_while_a_page_s_hello_is_read_reaches_that_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page connecting while another request changes the mode: the change lands after the
    hello's info was read. The socket subscribed only after that read once, so its hello said
    `ask` and the `auto` frame went to everyone but it (a page's header kept the old mode)."""
    from dsh.web.sessions import SessionRegistry

    env = ask_env(tmp_path, "echo unused")
    read_info = SessionRegistry.info
    armed: list[str] = []

    async def info_then_a_change(self: SessionRegistry, session_id: str) -> Any:
        snapshot = await read_info(self, session_id)
        if armed:  # another request's /approval, done just after the hello's info was read
            self.choose_approval(armed.pop(), "auto")
        return snapshot

    monkeypatch.setattr(SessionRegistry, "info", info_then_a_change)
    with open_client(env) as client:
        sid = new_session(client)
        armed.append(sid)
        with client.websocket_connect(f"/api/sessions/{sid}/live") as live:
            hello = live.receive_json()
            assert hello["kind"] == "hello" and hello["session"]["approval"]["mode"] == "ask"
            approval(client, sid, "read-only")  # a later change: a frame this page gets anyway
            modes = [live.receive_json()["approval"]["mode"]]
            if modes[0] != "read-only":
                modes.append(live.receive_json()["approval"]["mode"])
        assert modes == ["auto", "read-only"]  # the change made while it connected, then this
