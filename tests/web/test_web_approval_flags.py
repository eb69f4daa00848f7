"""``dsh web --yes`` and ``dsh web --allow KINDS`` (``dsh.cli.options``, as ``dsh run`` and ``dsh``
take them) decide the approval of every agent the server makes: a bash call from the page runs
without a pending approval, where the configured ``ask`` puts it to the page.

Real processes: ``dsh web`` with the keyless scripted provider. The flag definitions of the three
faces are compared in ``tests/cli/test_approval_flags.py``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.real_command import DshWeb, dsh_web_process
from tests.web.test_web_provider_flags import events_of, prompt_and_wait


def bash_script(tmp_path: Path) -> Path:
    script = tmp_path / "s.json"
    call = {"name": "bash", "arguments": {"command": "echo ran-unasked"}}
    script.write_text(json.dumps([{"toolCalls": [call]}, {"text": "All done."}]))
    return script


def new_session(web: DshWeb, cwd: Path) -> str:
    auth = {"Authorization": f"Bearer {web.token}"}
    with httpx.Client(base_url=web.base, headers=auth, timeout=60) as http:
        made = http.post("/api/sessions", json={"cwd": str(cwd)})
        assert made.status_code == 201, made.text
        session_id: str = made.json()["session"]["id"]
    return session_id


def tool_results(events: list[dict[str, Any]]) -> list[str]:
    return [
        e["data"]["message"]["content"][0]["content"][0]["text"]
        for e in events
        if e["type"] == "tool/result"
    ]


@pytest.mark.parametrize("flags", [("--yes",), ("--allow", "bash")])
def test_web_approval_flags_let_a_bash_call_run_without_asking(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    with dsh_web_process(tmp_path, ("--script", str(bash_script(tmp_path)), *flags)) as web:
        session_id = new_session(web, tmp_path)
        info = prompt_and_wait(web, session_id, "run it")
    assert info["approvals"] == []
    assert [text.strip() for text in tool_results(events_of(tmp_path / "home", session_id))] == [
        "ran-unasked"
    ]


def test_without_a_flag_the_configured_ask_puts_the_call_to_the_page(tmp_path: Path) -> None:
    with dsh_web_process(tmp_path, ("--script", str(bash_script(tmp_path)))) as web:
        session_id = new_session(web, tmp_path)
        auth = {"Authorization": f"Bearer {web.token}"}
        with httpx.Client(base_url=web.base, headers=auth, timeout=60) as http:
            started = http.post(f"/api/sessions/{session_id}/prompt", json={"text": "run it"})
            assert started.status_code == 202, started.text
            give_up = time.monotonic() + 120
            while not (info := http.get(f"/api/sessions/{session_id}").json())["approvals"]:
                assert info["running"] is not None and time.monotonic() < give_up, info
                time.sleep(0.05)
            [pending] = info["approvals"]
            assert pending["tool"] == "bash"
            denied = http.post(
                f"/api/sessions/{session_id}/approvals/{pending['id']}", json={"answer": "deny"}
            )
            assert denied.status_code < 300, denied.text
            while http.get(f"/api/sessions/{session_id}").json()["running"] is not None:
                assert time.monotonic() < give_up
                time.sleep(0.05)
    [result] = tool_results(events_of(tmp_path / "home", session_id))
    assert "the user denied this call" in result
