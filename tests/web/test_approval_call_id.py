"""An approval names the tool call it asks about (``callId``), so the page marks that call's
card: two identical calls (the same tool, the same arguments) are told apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import TOKEN, make_env, new_session, open_client, wait_idle
from tests.web.pages import open_page, serve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_each_approval_names_its_call(tmp_path: Path) -> None:
    env = make_env(tmp_path, approval="ask")
    call = {"name": "bash", "arguments": {"command": "echo same"}}
    env.script = [{"toolCalls": [call, call]}, {"text": "both ran"}]
    with open_client(env) as client:
        sid = new_session(client)
        asked: list[dict[str, Any]] = []
        with client.websocket_connect(f"/api/sessions/{sid}/live") as live:
            assert live.receive_json()["kind"] == "hello"
            client.post(f"/api/sessions/{sid}/prompt", json={"text": "run it twice"})
            while len(asked) < 2:
                frame = live.receive_json()
                if frame["kind"] != "approval":
                    continue
                asked.append(frame["approval"])
                pending = client.get(f"/api/sessions/{sid}").json()["approvals"]
                assert [a["callId"] for a in pending] == [frame["approval"]["callId"]]
                answer = {"answer": "once"}
                client.post(f"/api/sessions/{sid}/approvals/{frame['approval']['id']}", json=answer)
        wait_idle(client, sid)
    events = [json.loads(line) for line in env.log_lines(sid)]
    calls = [e["data"]["callId"] for e in events if e["type"] == "tool/call"]
    assert len(set(calls)) == 2
    assert [a["callId"] for a in asked] == calls


MATCHED = """async () => {
    const { RunningCards, ASKING, RUNNING } = await import('/s/running.js');
    const cards = new RunningCards(() => 0);
    const status = () => ({ textContent: '' });
    const args = '{"command": "echo same"}';
    const first = status();
    const second = status();
    cards.add(5, first, 'bash', args, 0, 'call_a');
    cards.add(6, second, 'bash', args, 0, 'call_b');
    const approval = { id: 'x', tool: 'bash', args: { command: 'echo same' } };
    cards.asking({ ...approval, callId: 'call_b' });  // the second call is asked
    const asked = [first.textContent, second.textContent];
    cards.answered('x');
    cards.asking({ ...approval, id: 'y', callId: 'call_a' });
    return [asked, [first.textContent, second.textContent], ASKING, RUNNING];
}"""


def test_the_page_marks_the_card_of_the_call_asked_about(browser: Any, tmp_path: Path) -> None:
    env = make_env(tmp_path)
    with serve(env) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        asked, then, asking, running = page.evaluate(MATCHED)
    assert asked == [running, asking]  # not the first card with the same tool and arguments
    assert then == [asking, running]
