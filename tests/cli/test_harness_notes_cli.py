"""``dsh sessions show`` as a real process: the notes dsh gave the model as user turns (what
``dsh undo`` took back, the output-limit notice) read ``Context from <plugin>: …``, not as the
person's ``User: …``; ``--view surface``, what the model reads, still says ``User: …``."""

from __future__ import annotations

import json

from dsh.agent.step_outcome import CUT_TEXT_CALL_NOT_RUN
from tests.cli.test_run_cli import dsh, env, write_script
from tests.cli.test_undo_cli import edit_session
from tests.helpers import run_session_id

__all__ = ["env"]  # the fixture, shared with dsh run's tests

UNDO_NOTE = "[undo] The user undid the file changes you made with write_file/edit_file"


def test_sessions_show_labels_the_undo_note_as_context_from_undo(tmp_path, env):
    workspace, session_id = edit_session(tmp_path, env)
    dsh("undo", env=env, cwd=workspace)
    shown = dsh("sessions", "show", session_id, env=env, cwd=tmp_path).stdout
    assert f"\n\nContext from undo: {UNDO_NOTE}" in shown
    assert "User: [undo]" not in shown
    assert shown.startswith("User: edit it\n\n")  # the person's prompt is still theirs
    surface = dsh("sessions", "show", session_id, "--view", "surface", env=env, cwd=tmp_path)
    assert f"\nUser: {UNDO_NOTE}" in surface.stdout  # the model's side: unchanged
    markdown = dsh("sessions", "export", session_id, env=env, cwd=tmp_path).stdout
    assert f"### Context from undo\n\n{UNDO_NOTE}" in markdown


def test_sessions_show_labels_the_output_limit_notice_as_context(tmp_path, env):
    cut_call = '{"name": "bash", "arguments": {"command": "touch x"}}\n{"name": "ba'
    script = write_script(
        tmp_path / "s.json", [{"text": cut_call, "finish": "max-tokens"}, {"text": "Sorry."}]
    )
    env = {**env, "DSH_PROVIDER_TEXT_TOOL_CALLS": "true"}
    ran = dsh("run", "--script", str(script), "make x", env=env, cwd=tmp_path)
    session_id = run_session_id(ran.stderr)
    events = dsh("sessions", "show", session_id, "--view", "events", env=env, cwd=tmp_path)
    sources = [json.loads(line)["data"].get("source") for line in events.stdout.splitlines()]
    assert {"kind": "plugin", "plugin": "output-limit"} in sources  # the notice was logged
    shown = dsh("sessions", "show", session_id, env=env, cwd=tmp_path).stdout
    assert f"\n\nContext from output-limit: {CUT_TEXT_CALL_NOT_RUN}\n\n" in shown
    assert "User: [NOT_RUN]" not in shown
    surface = dsh("sessions", "show", session_id, "--view", "surface", env=env, cwd=tmp_path)
    assert f"\nUser: {CUT_TEXT_CALL_NOT_RUN}" in surface.stdout
