"""The header's spend (``stats.spend``): ``/cost``'s estimated total and every billed token,
for a session open here (with each request's ``stats``) and one read from the store."""

from __future__ import annotations

from starlette.testclient import TestClient

from dsh.agent.billing import cost_report
from dsh.agent.spend import public_spend
from dsh.surface import Session
from tests.web.conftest import WebEnv, new_session, open_client, wait_idle


def test_the_info_carries_costs_figure_open_here_and_stored(env: WebEnv) -> None:
    with open_client(env) as client:
        sid = new_session(client)
        before = client.get(f"/api/sessions/{sid}").json()["stats"]["spend"]
        assert before == {"usd": None, "tokens": 0, "text": None}
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
        spend = wait_idle(client, sid)["stats"]["spend"]
        note = client.get(f"/api/sessions/{sid}/cost").json()["note"]
    with Session.open(env.store, sid) as session:
        assert spend == public_spend(cost_report(session.events))
    assert spend["usd"] > 0 and spend["tokens"] > 0  # the scripted model is priced as DeepSeek
    assert f"Estimated total: ${spend['usd']:.4f}" in note
    assert spend["text"] == f"${spend['usd']:.4f} · {spend['text'].split(' · ')[1]}"
    with open_client(env) as fresh:  # a server that has not opened it reads it from the store
        assert fresh.get(f"/api/sessions/{sid}").json()["stats"]["spend"] == spend


def test_a_stats_frame_carries_the_spend(client: TestClient) -> None:
    sid = new_session(client)
    with client.websocket_connect(f"/api/sessions/{sid}/live") as socket:
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "read notes"})
        while True:
            message = socket.receive_json()
            if message["kind"] == "stats" and message["stats"]["spend"]["tokens"]:
                break
    assert message["stats"]["spend"]["text"].endswith(" tok")
