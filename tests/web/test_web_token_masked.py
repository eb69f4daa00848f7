"""``dsh web --token T``: the token is on dsh's command line, which any process of the user's
reads (``ps aux``), a bash call's included. It is masked in tool output as a configured key is,
so neither the log nor the model's context holds it. Real processes: ``dsh web`` with the
keyless scripted provider and ``--yes``."""

from __future__ import annotations

import json
from pathlib import Path

from dsh.store.jsonl import JsonlStore
from tests.web.real_command import dsh_web_process
from tests.web.test_web_approval_flags import new_session, tool_results
from tests.web.test_web_provider_flags import events_of, prompt_and_wait

TOKEN = "flag-token-7d1e0c9b5a3f48e2a6c4d0b1f9e7a5c3"


def test_a_token_given_on_the_command_line_is_masked_in_what_ps_shows(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    call = {"name": "bash", "arguments": {"command": "ps -eo args | grep -F -- 'web --port'"}}
    script.write_text(json.dumps([{"toolCalls": [call]}, {"text": "All done."}]))
    flags = ("--script", str(script), "--yes", "--token", TOKEN)
    with dsh_web_process(tmp_path, flags) as web:
        assert web.token == TOKEN
        session_id = new_session(web, tmp_path)
        prompt_and_wait(web, session_id, "list the processes")
    [result] = tool_results(events_of(tmp_path / "home", session_id))
    assert "--token [masked dsh web token]" in result, result
    log = JsonlStore(tmp_path / "home").log_path(session_id).read_text()
    assert TOKEN not in log
