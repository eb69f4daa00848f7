"""``dsh run`` prints a small model's answer as it wrote it, but says on stderr that the tool
call it wrote inside its prose was not run, so "the tests passed … fixed" is not taken for
work done; ``--json`` carries the names on the reply's event, and ``dsh sessions show`` says
the same under the reply. The real console script, as a subprocess, with the keyless scripted
provider on a route that reads calls written as text."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.conftest import DSH
from tests.helpers import run_session_id

EDIT = {"name": "edit_file", "arguments": {"path": "app.py", "old": "bug", "new": "fix"}}
CLAIM = f"I will fix it.\n<tools>{json.dumps(EDIT)}</tools>\nThe tests passed: the bug is fixed."
NOTE = (
    "1 tool call written in the reply's text was not run (edit_file): the model wrote it as "
    "text instead of calling the tool"
)


def dsh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DSH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def workspace(tmp_path: Path, reply: str) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("bug\n")
    (ws / "s.json").write_text(json.dumps([{"text": reply}]))
    return ws


def test_dsh_run_says_the_call_written_in_the_answer_was_not_run(
    tmp_path: Path, env: dict[str, str]
) -> None:
    ws = workspace(tmp_path, CLAIM)
    local = {**env, "DSH_PROVIDER_TEXT_TOOL_CALLS": "true"}
    done = dsh("run", "--script", "s.json", "fix the bug", env=local, cwd=ws)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(CLAIM)  # the answer as the model wrote it
    session_id = run_session_id(done.stderr)
    assert done.stderr == f"session: {session_id}\ndsh: warning: turn 1: {NOTE}\n"
    assert (ws / "app.py").read_text() == "bug\n"
    shown = dsh("sessions", "show", session_id, env=local, cwd=ws)
    assert f"The tests passed: the bug is fixed.\n({NOTE})" in shown.stdout

    as_json = dsh("run", "--json", "--script", "s.json", "fix the bug", env=local, cwd=ws)
    assert as_json.stderr == f"dsh: warning: turn 1: {NOTE}\n"
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    (reply,) = [e for e in events if e["type"] == "assistant/message"]
    assert reply["data"]["textCallsNotRun"] == ["edit_file"]


def test_dsh_run_says_nothing_of_an_answer_without_calls_in_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    ws = workspace(tmp_path, "Change `bug` to `fix` in app.py.")
    local = {**env, "DSH_PROVIDER_TEXT_TOOL_CALLS": "true"}
    done = dsh("run", "--json", "--script", "s.json", "where is the bug?", env=local, cwd=ws)
    assert done.returncode == 0 and done.stderr == ""
    assert "textCallsNotRun" not in done.stdout
