"""The find route when replies reuse ``call_0``: each tool hit names the card it shows in."""

from __future__ import annotations

from pathlib import Path

from dsh.events import ToolCallEvent
from tests.same_call_ids import FIRST_OUTPUT, MISSING_DIR, run_same_id_turn
from tests.web.conftest import make_env, open_client


def test_each_find_hit_names_the_card_of_the_call_it_belongs_to(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    sid = run_same_id_turn(env.store, env.workspace)
    log = env.store.open(sid)
    calls = [e.seq for e in log.events if isinstance(e, ToolCallEvent)]
    log.close()
    with open_client(env) as client:
        first = client.get(f"/api/sessions/{sid}/find", params={"q": FIRST_OUTPUT}).json()
        second = client.get(f"/api/sessions/{sid}/find", params={"q": MISSING_DIR}).json()
    assert [(h["kind"], h["callId"], h["cardSeq"]) for h in first["hits"]] == [
        ("tool-result", "call_0", calls[0])
    ]
    tool_hits = [(h["kind"], h["cardSeq"]) for h in second["hits"] if h["kind"].startswith("tool")]
    assert tool_hits == [("tool-call", calls[1]), ("tool-result", calls[1])]
    assert all(h["cardSeq"] is None for h in second["hits"] if not h["kind"].startswith("tool"))
